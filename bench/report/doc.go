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
// Strata's GC-policy variants ("strata/passive") are Strata too: highlighted
// like it, and when plain Strata did not run, the first of them is what the
// others are compared with.
//
// A result under the floor (bench.Result.TooShort: under
// bench.MinPhaseDuration or bench.MinPhaseOps) is shown, marked as too
// short, and enters no ratio: a phase of 199 operations in 20 ms measures
// start-up, not the engine. The table's summary gives each ratio with the
// repetitions it rests on (bench.Report.Repeats where neither side was too
// short) and the smallest and largest of their own ratios.
//
// Overwrite rounds (bench.Spec.Rounds) get one view of their own instead of
// one per round: a table with a row per engine and round, and in the HTML
// line charts per round of space amplification (after settling, solid, and
// before, dashed), bytes written and throughput, and throughput over time
// through all rounds.
package report
