package wasm

// ABIVersion is the version of ABI.md this package implements: what a guest's
// uastack_abi_version returns and what the host (package wasmhost) accepts. It is in a
// file without a build constraint so that the host, which is not built for wasip1,
// imports the same constant.
const ABIVersion = 1
