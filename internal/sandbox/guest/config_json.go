package guest

import (
	"github.com/verisim/verisim/internal/sandbox/wire/jsonlite"
)

// UnmarshalJSON decodes a Config into a zero Config without reflection:
// the init decodes one in a fresh process for every sandbox, where
// encoding/json's first use costs ~15 times its steady speed (package
// jsonlite). The host encodes it with encoding/json.
func (c *Config) UnmarshalJSON(b []byte) error {
	*c = Config{}
	return jsonlite.Decode(b, "config", func(r *jsonlite.Reader, key string) error {
		switch key {
		case "layers":
			return r.StringsTo(&c.Layers)
		case "disk_bytes":
			return r.Int64To(&c.DiskBytes)
		case "hostname":
			return r.StringTo(&c.Hostname)
		case "session":
			return jsonlite.PtrTo(r, &c.Session, func(s *Session, key string) error {
				switch key {
				case "user":
					return r.StringTo(&s.User)
				case "uid":
					return r.Uint32To(&s.UID)
				case "gid":
					return r.Uint32To(&s.GID)
				case "since":
					return r.Int64To(&s.Since)
				}
				return r.Skip()
			})
		case "last_pid":
			return r.IntTo(&c.LastPID)
		case "binds":
			return jsonlite.ArrayTo(r, &c.Binds, func(b *Bind) error {
				return r.Object(func(key string) error {
					switch key {
					case "source":
						return r.StringTo(&b.Source)
					case "target":
						return r.StringTo(&b.Target)
					case "read_only":
						return r.BoolTo(&b.ReadOnly)
					}
					return r.Skip()
				})
			})
		case "views":
			return jsonlite.ArrayTo(r, &c.Views, func(v *View) error {
				return r.Object(func(key string) error {
					switch key {
					case "source":
						return r.StringTo(&v.Source)
					case "target":
						return r.StringTo(&v.Target)
					}
					return r.Skip()
				})
			})
		case "lifeline":
			return r.BoolTo(&c.Lifeline)
		case "rootless":
			return r.BoolTo(&c.Rootless)
		case "new_cgroup_ns":
			return r.BoolTo(&c.NewCgroupNS)
		case "cgroup_root_tasks":
			return r.StringTo(&c.CgroupRootTasks)
		case "command_tasks":
			return r.StringTo(&c.CommandTasks)
		case "cgroup_fs":
			return r.StringsTo(&c.CgroupFS)
		}
		return r.Skip()
	})
}
