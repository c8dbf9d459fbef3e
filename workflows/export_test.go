package workflows

// ChangeLateSuccess is lateSuccess, for tests that replay the way before it.
const ChangeLateSuccess = lateSuccess

// LateSuccessRecount is lateSuccessRecount, the version that counts again.
const LateSuccessRecount = lateSuccessRecount

// ChangeChainStreaks is chainStreaks, for tests that count the way before
// it.
const ChangeChainStreaks = chainStreaks

// ChainStreaksAfter is the name chainStreaks is asked under at a run's
// n-th report counted the way before it.
func ChainStreaksAfter(n int) string { return askedAgain(chainStreaks, n) }

// RememberedEnds is rememberedEnds.
const RememberedEnds = rememberedEnds

// CountByEnds is countByEnds.
var CountByEnds = countByEnds

// ChangeLostAttemptRow is lostAttemptRow.
const ChangeLostAttemptRow = lostAttemptRow
