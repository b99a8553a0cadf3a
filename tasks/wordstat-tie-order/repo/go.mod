module github.com/jsato/wordstat

go 1.22
