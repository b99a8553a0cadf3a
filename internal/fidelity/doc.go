// Package fidelity measures how much a sandbox looks like a real developer's
// machine. A model that can tell it is in a training sandbox behaves
// differently there than in production, so verisim measures fidelity with
// probes for "tells" instead of assuming it.
//
// A Probe observes one thing from inside a machine, as the machine's default
// user would: it runs a /bin/sh script (or reads a file) through the
// sandbox.Sandbox interface and records Facts. It then judges the facts: ok,
// or a tell with one line of evidence. Each probe says why a model could use
// the tell (Why), how much it gives away (Severity) and, when a backend may
// be unable to remove it, a Limitation saying why and what a microVM
// backend would change.
//
// Capture runs every observation on a real machine and returns a Profile,
// a versioned JSON reference. Audit runs the probes in a sandbox and
// returns a Report; with a Profile, probes judge against the reference (a
// process count within a factor of the reference's, the same kinds of
// devices, the same mount types, …) and an observation identical to the
// reference's is ok by definition.
//
// # Promises
//
//   - Audits are honest: a tell is never hidden. A tell the backend cannot
//     remove is still a tell, marked with its limitation and counted in
//     Counts.Limited.
//   - A probe that cannot observe or decide (a missing /bin/sh, a timeout, no
//     repository to inspect, a panic) yields an "error" row with the reason,
//     never a tell and never an ok. A missing tool that a probe would merely
//     use is evidence, not a crash.
//   - Every probe has its own timeout; probes run concurrently, at most
//     AuditOptions.Concurrency (8 by default) at once. Probe shells carry a
//     marker so the process probes leave them, and what they start, out.
//   - Probes only read: they create no files in the machine.
//   - Capture, Audit and the Report and Profile methods are safe for
//     concurrent use; a Report or Profile is not mutated after it is returned.
//
// # Adding a probe
//
//  1. Add a Probe to the list in the probes_*.go file of its area, with a
//     kebab-case Name that is new and never reused, a one-sentence Why that
//     says how a model would notice, a Severity and, if a namespace backend
//     cannot remove the tell, a Limitation.
//  2. Observe with script(`…`): a POSIX sh script (dash and busybox too) that
//     prints each fact after a `fact NAME` line, uses `have TOOL` before any
//     tool outside POSIX, and prints `fact error` and a reason when it cannot
//     observe at all. Go observations (machine.readFile, machine.exists)
//     serve files read with root's view. List every fact in keys; an
//     observation without them is an error.
//  3. Write judge(obs, ref): ref is the reference machine's facts or nil.
//     Return ok, tell or undecided with one short line of evidence. Keep
//     secrets out of facts: a profile is meant to be shared.
//  4. In probes_test.go add a case where the probe fires and one where it
//     does not; TestEveryProbeHasCases fails until both exist.
package fidelity
