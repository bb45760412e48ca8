// Package tool is the operators' tool of Strata: the commands of
// cmd/strata, in a package of their own so that a program embedding the
// engine can mount the same commands (as Pebble's tool package does):
//
//	t := tool.New()
//	os.Exit(t.Run(os.Args[1:]))
//
// or take t.Commands() into its own command dispatcher.
//
// The commands:
//
//	check DIR                         verify a database, exit status 1 on any problem
//	check --store DIR_OR_URL [DBDIR...] [--quick] [--fix] [--all]
//	                                  audit a store and the databases that share files in it
//	dump sst|vlog|manifest|wal FILE   print a file, with offsets
//	lsm DIR                           the levels: tables, key ranges, sizes, value-log references
//	scan DIR [--start K] [--end K] [--limit N]
//	get DIR KEY
//	gc DIR [--policy NAME]            the garbage ledger and what the policy would decide next
//	floor DIR [DIR...] [--rate R]     the least a point read of a separated value costs here, per database
//	stress --dir DIR [...]            random concurrent workload, checked against an expected state
//	crashtest --dir DIR [...]         stress killed with SIGKILL again and again, each restart verified
//
// check --store audits an object store that holds checkpoints and shared
// files (checkpoint.Audit does the work, reading the manifests of the
// databases given with remote.ReadInstance), then opens each database
// given read-only with the store and scans it. The store is a local
// store's directory or s3://BUCKET[/PREFIX], reached with the endpoint,
// region and keys of the AWS tools' environment variables.
//
// A database written with merges is read with its merge operator: the
// built-in one its manifest records, unless the global flag --merger
// list|counter (before the command) names one; an embedding program with
// its own sets Tool.Options.
//
// Commands that read a database open it with strata.Options.ReadOnly: they
// write nothing, take no lock, and may run beside a process that has the
// database open (see ReadOnly for what such a reader sees). check, lsm and
// gc also read the manifest, tables and value logs directly.
//
// It does not own any format: it reads files through the packages that
// write them (lsm/sstable, vlog, lsm/manifest, lsm/record), and the
// database through the public API. floor maps the tables and value logs
// of the manifest's version itself, as the DB does, to time bare memory
// accesses over them.
package tool
