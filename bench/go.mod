module uastack.dev/bench

go 1.26.0

require (
	github.com/gopcua/opcua v0.8.0
	github.com/nats-io/nats.go v1.55.0
	github.com/stretchr/testify v1.12.1
	uastack.dev/pkg v0.0.0
	uastack.dev/tools v0.0.0
)

require (
	github.com/antithesishq/antithesis-sdk-go v0.8.0-default-no-op // indirect
	github.com/google/go-tpm v0.9.8 // indirect
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/minio/highwayhash v1.0.4 // indirect
	github.com/nats-io/jwt/v2 v2.8.2 // indirect
	github.com/nats-io/nats-server/v2 v2.15.2 // indirect
	github.com/nats-io/nkeys v0.4.16 // indirect
	github.com/nats-io/nuid v1.0.1 // indirect
	golang.org/x/crypto v0.59.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/time v0.16.0 // indirect
)

require (
	github.com/google/uuid v1.6.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	uastack.dev/services/mirror v0.0.0
)

replace uastack.dev/pkg => ../pkg

replace uastack.dev/tools => ../tools

replace uastack.dev/services/mirror => ../services/mirror
