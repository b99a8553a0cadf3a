module github.com/ana-lima/timeparse

go 1.22
