// Package report renders a bench.Report for people and for programs: a
// terminal table (WriteTable), indented JSON (WriteJSON), and a
// self-contained HTML page with inline SVG charts (WriteHTML). It also
// provides the progress display the runner reports to while benchmarks run
// (NewProgress).
//
// Every view groups results by benchmark, in the order of the report's spec,
// and lists engines in the spec's engine order. Throughput is compared as a
// ratio to Strata's in the same run, since the machines benchmarks run on are
// shared and noisy: a ratio taken in one run says more than an absolute rate.
package report
