// Package bench holds the measuring tools behind `furrow bench baseline`,
// `ingest` and `delivery`: load generators, the HTTPS receiver that times
// deliveries, and the reports they print. BENCHMARKS.md records what they
// measured. It is internal because it is a tool of this repository, not part
// of Furrow's API.
package bench
