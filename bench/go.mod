module uastack.dev/bench

go 1.26

require uastack.dev/pkg v0.0.0

replace uastack.dev/pkg => ../pkg
