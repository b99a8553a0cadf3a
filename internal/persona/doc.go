// Package persona is the developer who "owns" a sandbox machine: their
// account, host name, time zone, locale, environment, dotfiles, shell
// history, git identity and checked-out repositories.
//
// A Persona comes from a YAML file (Load, Parse) or the built-in Default.
// Loading is strict: unknown fields are errors, every field is validated,
// and each problem is reported as a *FieldError naming the file, line and
// field with a way to fix it.
//
// From a Persona the package produces what a sandbox needs:
//   - User and Env, for the sandbox.Spec;
//   - WriteLayer, an overlay layer with the account merged into the base
//     image's /etc files, host identity files and a lived-in home;
//   - PlaceRepo, a real git clone of a local checkout in the persona's
//     workspace that looks cloned from its origin and pulled since.
//
// Promises:
//   - Nothing produced mentions sandboxes, verisim, tasks, ids or host
//     paths, and Env has no TZ (the zone is in /etc/localtime, as on real
//     machines).
//   - Output is reproducible: contents, modes and timestamps are a
//     function of the persona (its Seed in particular), the base image and
//     Persona.Now. Timestamps are spread over the months before Now; only
//     ctimes, which no program can set, show when a layer was built.
//   - WriteLayer and PlaceRepo are all-or-nothing: on error they leave
//     nothing behind in the target directory.
//   - Ownership is the persona's uid/gid (root's for system files) when the
//     process may chown; an unprivileged process leaves its own ownership.
//
// A Persona is a value to configure, then use: methods may run
// concurrently with each other except WriteLayer, which records the base
// image's groups for User.
package persona
