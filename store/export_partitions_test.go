package store

// PartitionLockKey is the advisory lock that serialises partition DDL.
const PartitionLockKey = partitionLockKey

// ChainSpan is how long retention holds an event's day for a chain started
// for it.
var ChainSpan = chainSpan
