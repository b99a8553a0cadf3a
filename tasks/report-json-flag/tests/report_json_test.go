package main

import (
	"bytes"
	"encoding/json"
	"testing"
)

type jsonRow struct {
	Project string `json:"project"`
	Minutes int    `json:"minutes"`
}

func decodeRows(t *testing.T, b []byte) []jsonRow {
	t.Helper()
	var raw []map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatalf("output is not a JSON array: %v\n%s", err, b)
	}
	for _, r := range raw {
		if len(r) != 2 {
			t.Errorf("row %v: want exactly the keys project and minutes", r)
		}
	}
	var rows []jsonRow
	if err := json.Unmarshal(b, &rows); err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestReportJSON(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"report", "--json", writeLog(t)}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	rows := decodeRows(t, out.Bytes())
	want := []jsonRow{{"website", 210}, {"infra", 105}, {"docs", 45}}
	if len(rows) != len(want) {
		t.Fatalf("rows = %+v, want %+v", rows, want)
	}
	for i := range want {
		if rows[i] != want[i] {
			t.Errorf("row %d = %+v, want %+v", i, rows[i], want[i])
		}
	}
}

func TestReportJSONWithSince(t *testing.T) {
	for _, args := range [][]string{
		{"report", "--json", "-since", "2024-05-03"},
		{"report", "-since", "2024-05-03", "-json"},
	} {
		var out, errb bytes.Buffer
		if code := run(append(args, writeLog(t)), &out, &errb); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errb.String())
		}
		rows := decodeRows(t, out.Bytes())
		want := []jsonRow{{"infra", 105}, {"docs", 45}}
		if len(rows) != 2 || rows[0] != want[0] || rows[1] != want[1] {
			t.Errorf("%v: rows = %+v, want %+v", args, rows, want)
		}
	}
}

func TestReportJSONEmpty(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"report", "--json", "-since", "2030-01-01", writeLog(t)}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if rows := decodeRows(t, out.Bytes()); len(rows) != 0 {
		t.Errorf("rows = %+v, want none", rows)
	}
	if bytes.Contains(out.Bytes(), []byte("null")) {
		t.Errorf("empty report should be [], got %s", out.String())
	}
}

func TestReportTableUnchanged(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"report", writeLog(t)}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !bytes.HasPrefix(out.Bytes(), []byte("PROJECT  TIME\n")) || !bytes.Contains(out.Bytes(), []byte("TOTAL    6h00m")) {
		t.Errorf("table output changed:\n%s", out.String())
	}
}
