// Package rollout runs episodes end to end: a task's machine is prepared
// once (repository placed in a persona's workspace, setup run, snapshot
// taken), each of its G samples runs in a fork of that snapshot through the
// production harness, is graded there with the hidden tests once the agent
// has finished, labelled by the anti-cheating monitors, scored, and handed
// to a sink as a trajectory.
//
// Infrastructure failures (a sandbox that cannot be forked, a model server
// that stays unreachable, a grader that cannot run) are retried up to a
// bound and then recorded as infra_error, never as a zero reward. An
// interrupted run (ctx cancelled) records nothing for the episodes it cut
// short and removes every sandbox and snapshot it made; the sink has every
// episode that finished.
//
// Run is safe to call from one goroutine per Config; the Config's Model must
// be safe for concurrent use (policy.Client is).
package rollout
