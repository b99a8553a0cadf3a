package pager

import "testing"

func TestNew(t *testing.T) {
	p := New(45, 20, 2)
	want := Page{Number: 2, PerPage: 20, Total: 45, TotalPages: 3, Offset: 20, Limit: 20, HasNext: true, HasPrev: true}
	if p != want {
		t.Fatalf("New(45, 20, 2) = %+v, want %+v", p, want)
	}
}

func TestLastPartialPage(t *testing.T) {
	p := New(45, 20, 3)
	if p.Offset != 40 || p.Limit != 5 || p.HasNext || !p.HasPrev {
		t.Fatalf("New(45, 20, 3) = %+v", p)
	}
}

func TestPastTheEnd(t *testing.T) {
	p := New(45, 20, 9)
	if p.Limit != 0 || p.Offset != 45 || p.HasNext {
		t.Fatalf("New(45, 20, 9) = %+v", p)
	}
}

func TestClampsArguments(t *testing.T) {
	p := New(5, 0, -3)
	if p.Number != 1 || p.PerPage != 1 || p.Limit != 1 {
		t.Fatalf("New(5, 0, -3) = %+v", p)
	}
}

func TestExactMultiple(t *testing.T) {
	p := New(40, 20, 2)
	want := Page{Number: 2, PerPage: 20, Total: 40, TotalPages: 2, Offset: 20, Limit: 20, HasNext: false, HasPrev: true}
	if p != want {
		t.Fatalf("New(40, 20, 2) = %+v, want %+v", p, want)
	}
	if p := New(40, 20, 1); p.TotalPages != 2 || !p.HasNext {
		t.Fatalf("New(40, 20, 1) = %+v", p)
	}
}

func TestTotalPages(t *testing.T) {
	cases := []struct{ total, per, want int }{
		{1, 20, 1},
		{19, 20, 1},
		{20, 20, 1},
		{21, 20, 2},
		{100, 10, 10},
		{101, 10, 11},
		{7, 1, 7},
	}
	for _, c := range cases {
		if got := New(c.total, c.per, 1).TotalPages; got != c.want {
			t.Errorf("New(%d, %d, 1).TotalPages = %d, want %d", c.total, c.per, got, c.want)
		}
	}
}

func TestSinglePageHasNoNext(t *testing.T) {
	if p := New(20, 20, 1); p.HasNext {
		t.Fatalf("New(20, 20, 1) = %+v, want HasNext false", p)
	}
}
