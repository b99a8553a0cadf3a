module github.com/nadia-haddad/pingsvc

go 1.22
