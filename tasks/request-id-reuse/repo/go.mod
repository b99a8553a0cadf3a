module github.com/dmitri-v/httpkit

go 1.22
