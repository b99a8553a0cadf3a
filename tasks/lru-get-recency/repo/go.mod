module github.com/rvdberg/cachekit

go 1.22
