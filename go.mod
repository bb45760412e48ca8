module github.com/strata-db/strata

go 1.25.0

require (
	github.com/cespare/xxhash/v2 v2.3.0
	github.com/google/btree v1.1.3
	github.com/klauspost/compress v1.20.4
	github.com/stretchr/testify v1.12.1
	golang.org/x/sys v0.41.0
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect
