module uastack.dev/tools

go 1.26

require (
	github.com/stretchr/testify v1.12.1
	uastack.dev/pkg v0.0.0
)

replace uastack.dev/pkg => ../pkg
