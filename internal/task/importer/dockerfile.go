package importer

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// ErrNeedsImageBuild is wrapped by errors for Harbor tasks whose
// environment has to be built (a Dockerfile that runs or copies something,
// a compose file): verisim runs every task on its own images, so such a
// task's environment cannot be reproduced.
var ErrNeedsImageBuild = errors.New("needs an image build")

// dockerfile is what a build-free Dockerfile says about the environment.
type dockerfile struct {
	images  []string // the FROM images, in order
	workdir string   // the last WORKDIR, "" if none
}

// Instructions a Dockerfile may hold and still need no build: they name
// the base image, set the working directory, environment and user, or only
// describe how a container of the image would be run, which verisim,
// starting its own machine, does not use. Everything else (RUN, COPY, ADD,
// ONBUILD, VOLUME, ...) changes the file system and needs a build.
var noBuild = map[string]bool{
	"FROM": true, "WORKDIR": true, "ENV": true, "LABEL": true, "ARG": true, "USER": true,
	"MAINTAINER": true, "CMD": true, "ENTRYPOINT": true, "EXPOSE": true,
	"STOPSIGNAL": true, "HEALTHCHECK": true, "SHELL": true,
}

// parseDockerfile reads a Dockerfile, failing with ErrNeedsImageBuild at
// the first instruction that needs a build; name is used in errors.
// Continuation lines, comments inside them and the escape parser directive
// follow Docker's rules.
func parseDockerfile(name string, data []byte) (*dockerfile, error) {
	lines := strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n")
	escape := "\\"
	df := &dockerfile{}
	directives := true
	for i := 0; i < len(lines); i++ {
		trimmed := strings.TrimSpace(lines[i])
		if directives {
			if k, v, ok := parserDirective(trimmed); ok {
				if k == "escape" && (v == "`" || v == "\\") {
					escape = v
				}
				continue
			}
			directives = false // directives only come first
		}
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		start := i + 1
		var b strings.Builder
		for {
			line := strings.TrimRight(lines[i], " \t")
			cont := strings.HasSuffix(line, escape)
			b.WriteString(strings.TrimSuffix(line, escape))
			if !cont {
				break
			}
			b.WriteByte(' ')
			// Comment and empty lines inside a continued instruction are
			// dropped, not ends of it.
			for i+1 < len(lines) && (strings.TrimSpace(lines[i+1]) == "" || strings.HasPrefix(strings.TrimSpace(lines[i+1]), "#")) {
				i++
			}
			if i+1 >= len(lines) {
				break
			}
			i++
		}
		text := strings.Join(strings.Fields(b.String()), " ")
		word, args, _ := strings.Cut(text, " ")
		switch kw := strings.ToUpper(word); {
		case !noBuild[kw]:
			short := text
			if len(short) > 60 {
				short = short[:57] + " ..."
			}
			return nil, fmt.Errorf("%s:%d: %s %w; verisim runs tasks on its own images", name, start, short, ErrNeedsImageBuild)
		case kw == "FROM":
			for _, f := range strings.Fields(args) {
				if !strings.HasPrefix(f, "--") {
					df.images = append(df.images, f)
					break
				}
			}
		case kw == "WORKDIR":
			wd := strings.Trim(args, `"'`)
			if !path.IsAbs(wd) { // relative to the previous WORKDIR
				wd = path.Join("/", df.workdir, wd)
			}
			df.workdir = path.Clean(wd)
		}
	}
	return df, nil
}

// workspaceName is the repository name a Harbor task's working directory
// suggests: /app gives "app".
func (df *dockerfile) workspaceName() string {
	base := path.Base(df.workdir)
	if df.workdir == "" || base == "/" || base == "." || strings.ContainsAny(base, "$ ") {
		return "app"
	}
	return base
}

// parserDirective reads "# key=value" at the top of a Dockerfile.
func parserDirective(line string) (string, string, bool) {
	rest, ok := strings.CutPrefix(line, "#")
	if !ok {
		return "", "", false
	}
	k, v, ok := strings.Cut(rest, "=")
	k = strings.ToLower(strings.TrimSpace(k))
	if !ok || k == "" || strings.ContainsAny(k, " \t") {
		return "", "", false
	}
	return k, strings.TrimSpace(v), true
}
