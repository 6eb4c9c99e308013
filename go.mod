module tessera

go 1.26.8

require (
	github.com/dmitryikh/leaves v0.0.0-20230708180554-25d19a787328
	go.etcd.io/bbolt v1.4.3
	google.golang.org/protobuf v1.36.11
)

require golang.org/x/sys v0.29.0 // indirect
