module github.com/strata-db/strata

go 1.26.8
