module github.com/sofia-marin/backoff

go 1.22
