package timeparse

import (
	"strconv"
	"strings"
	"time"
)

var formatUnits = []struct {
	name string
	d    time.Duration
}{
	{"w", Week},
	{"d", Day},
	{"h", time.Hour},
	{"m", time.Minute},
	{"s", time.Second},
}

// FormatDuration renders d with the largest units first, e.g. "1d12h" or
// "2w3d4h5m6s". Anything below a second is dropped; zero is "0s".
func FormatDuration(d time.Duration) string {
	neg := d < 0
	if neg {
		d = -d
	}
	d = d.Truncate(time.Second)
	if d == 0 {
		return "0s"
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for _, u := range formatUnits {
		if d >= u.d {
			n := d / u.d
			d -= n * u.d
			b.WriteString(strconv.FormatInt(int64(n), 10))
			b.WriteString(u.name)
		}
	}
	return b.String()
}
