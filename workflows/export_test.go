package workflows

// ChangeLateSuccess is lateSuccess, for tests that replay the way before it.
const ChangeLateSuccess = lateSuccess
