package workflows

// ChangeLateSuccess is lateSuccess, for tests that replay the way before it.
const ChangeLateSuccess = lateSuccess

// LateSuccessRecount is lateSuccessRecount, the version that counts again.
const LateSuccessRecount = lateSuccessRecount
