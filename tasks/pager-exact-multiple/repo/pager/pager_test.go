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
