package statement

import "sort"

// Month is the sum of a month's transactions.
type Month struct {
	Key      string // "2024-05"
	InCents  int64
	OutCents int64
}

// Summarize totals incoming and outgoing amounts per month, oldest first.
func Summarize(txns []Txn) []Month {
	byKey := map[string]*Month{}
	for _, t := range txns {
		k := t.Date.Format("2006-01")
		m := byKey[k]
		if m == nil {
			m = &Month{Key: k}
			byKey[k] = m
		}
		if t.Cents >= 0 {
			m.InCents += t.Cents
		} else {
			m.OutCents += -t.Cents
		}
	}
	out := make([]Month, 0, len(byKey))
	for _, m := range byKey {
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}
