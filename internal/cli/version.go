package cli

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// BuildVersion says which build of the running program this is, from the
// build information the go command embeds: the main module's version (a
// tag, or a pseudo-version such as v0.0.0-20261207044900-3bc704c1e2f3
// that names the commit; "(devel)" for a build that had no VCS to ask),
// the VCS revision and whether the tree had uncommitted changes, and the
// Go version and platform. It reads nothing but the binary.
func BuildVersion() string {
	version, revision, modified := "(unknown)", "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		version = bi.Main.Version
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	var b strings.Builder
	b.WriteString(version)
	if revision != "" {
		b.WriteString(" (revision " + revision)
		if modified {
			b.WriteString(", with uncommitted changes")
		}
		b.WriteString(")")
	}
	b.WriteString(" " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH)
	return b.String()
}
