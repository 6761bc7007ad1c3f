// Package testguest holds WASM guests that the host's tests build and run: each
// subdirectory is a package main built with GOOS=wasip1 GOARCH=wasm -buildmode=c-shared.
package testguest
