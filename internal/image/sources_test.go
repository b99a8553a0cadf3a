package image

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestDebianMirror(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string // relative to /etc/apt
		want  string            // "" → an error
	}{
		{
			name: "deb822 as on this kind of machine",
			files: map[string]string{"sources.list.d/debian.sources": `Types: deb
# http://snapshot.debian.org/archive/debian/20250520T000000Z
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
`},
			want: "http://deb.debian.org/debian",
		},
		{
			name: "one-line with options, security first",
			files: map[string]string{"sources.list": `# comment
deb-src http://src.example.org/debian bookworm main
deb http://security.debian.org/debian-security bookworm-security main
deb [arch=amd64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://ftp.de.debian.org/debian/ bookworm main contrib # trailing
deb http://later.example.org/debian bookworm main
`},
			want: "http://ftp.de.debian.org/debian",
		},
		{
			name:  "bracket options with spaces",
			files: map[string]string{"sources.list": "deb [ arch=amd64 ] https://mirror.example.net/pub/debian bookworm main\n"},
			want:  "https://mirror.example.net/pub/debian",
		},
		{
			name: "third-party repositories sort first and are skipped",
			files: map[string]string{
				"sources.list.d/a-google.list":          "deb https://packages.cloud.google.com/apt cloud-sdk-bookworm main\n",
				"sources.list.d/b-nodesource.sources":   "Types: deb\nURIs: https://deb.nodesource.com/node_20.x\nSuites: nodistro\nComponents: main\n",
				"sources.list.d/c-debian.sources":       "Types: deb\nURIs: http://snapshot.debian.org/archive/debian/20250520T000000Z/\nSuites: bookworm\nComponents: main\n",
				"sources.list.d/z-debian.list.disabled": "deb http://disabled.example.org/debian bookworm main\n",
			},
			want: "http://snapshot.debian.org/archive/debian/20250520T000000Z",
		},
		{
			name: "sources.list before sources.list.d",
			files: map[string]string{
				"sources.list":                  "deb http://first.example.org/debian bookworm main\n",
				"sources.list.d/debian.sources": "Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm\nComponents: main\n",
			},
			want: "http://first.example.org/debian",
		},
		{
			name: "disabled and non-main entries are skipped",
			files: map[string]string{"sources.list.d/debian.sources": `Types: deb
URIs: http://off.example.org/debian
Suites: bookworm
Components: main
Enabled: no

Types: deb deb-src
URIs: http://contrib.example.org/debian
Suites: bookworm
Components: contrib non-free

types: deb
uris:
 http://continued.example.org/debian
 http://second.example.org/debian
suites: bookworm
components: main
`},
			want: "http://continued.example.org/debian",
		},
		{
			name:  "only unsupported schemes",
			files: map[string]string{"sources.list": "deb mirror+file:/etc/apt/mirrors/debian.list bookworm main\n"},
		},
		{
			name:  "nothing configured",
			files: map[string]string{"sources.list.d/.keep": ""},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			apt := filepath.Join(t.TempDir(), "apt")
			writeFiles(t, apt, tc.files)
			got, err := debianMirror(apt)
			if tc.want == "" {
				if err == nil || !strings.Contains(err.Error(), apt) {
					t.Errorf("debianMirror = %q, %v; want an error naming %s", got, err, apt)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("debianMirror = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
