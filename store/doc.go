// Package store persists fleetmux's audit log, per-host state and jobs in
// one bbolt file.
//
// # Sharing the file
//
// Every MCP client starts its own fleetmux process, and `fleetmux audit` reads
// while they run, so several processes use one file at once. bbolt takes a
// flock on the file for as long as it is open, so a [Store] never keeps it
// open: each operation opens the file with a bounded lock wait
// ([Options.LockTimeout]), runs one short transaction and closes it again.
// Goroutines of one process queue on an in-process semaphore per file first
// (flock is per open file description, so they would otherwise contend
// through bbolt's 50 ms polling). A lock that stays busy past the timeout
// gives an error matching [ErrLocked]; no call waits longer than that.
// Readers such as `fleetmux audit` open the file with [Options.ReadOnly]:
// shared locks only, and the file is never created or changed. A process
// whose first open found the file locked can keep a [Handle] and retry on
// each later operation.
//
// Writes are committed with fdatasync before Append returns, so a process
// killed with SIGKILL at any moment leaves a file that opens with every record
// whose Append had returned.
//
// # Bucket tree (schema version 3)
//
//	fleetmux/                  root bucket; its absence marks a foreign file
//	  meta/
//	    schema_version         decimal ASCII, currently "3"
//	    created                RFC 3339 time the tree was created
//	    retired                present only in a file that Compact replaced:
//	                           a process that still had it open reopens the path
//	  audit/                   one audit Record per key, JSON value
//	    <unix ns, 8 bytes BE><seq, 8 bytes BE>
//	                           keys sort by time; seq is the bucket sequence,
//	                           unique and increasing in commit order
//	  hosts/
//	    <host alias>           HostState, JSON value
//	  jobs/                    (added by version 3)
//	    <job id>               Job, JSON value; deleted by Prune with the
//	                           audit records of their age
//
// Schema version 2 had no jobs bucket. Schema version 1 was the flat layout of early development builds: top-level
// buckets meta (key "version" = "1"), audit (keys are the 8-byte sequence,
// values the legacy record JSON) and hosts. Open migrates older files forward
// with the ordered migrations in migrate.go, each in one transaction; a file
// written by a newer fleetmux is refused with [ErrNewerSchema].
package store
