package workflows

// ChangeUnsent is unsentChange, for tests that run its older versions.
const ChangeUnsent = unsentChange
