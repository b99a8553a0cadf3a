module github.com/kwame-asante/throttle

go 1.22
