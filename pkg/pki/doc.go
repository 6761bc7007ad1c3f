// Package pki holds the certificate stores of an OPC UA application, its
// application instance certificate, and the validation of peer certificates.
//
// The stores use the folder layout that OPC UA integrators know from the
// .NET stack and from Part 12 §7.7 (directory stores):
//
//	<root>/own/certs       the application instance certificate (DER)
//	<root>/own/private     its private key (PEM, PKCS#8, mode 0600)
//	<root>/trusted/certs   trusted application and CA certificates
//	<root>/trusted/crl     CRLs of trusted CAs
//	<root>/issuer/certs    CA certificates used only to build chains
//	<root>/issuer/crl      CRLs of those CAs
//	<root>/rejected/certs  copies of certificates that were refused
//
// Certificates are read as DER (.der, .cer, .crt) or PEM; CRLs as DER
// (.crl, .der) or PEM. [PKI.Validate] follows the order of checks of
// Part 4 §6.1.3 (Table 106: certificate validation steps) and returns a
// [*ValidationError] that carries the precise [status.Code].
//
// A [PKI] is safe for concurrent use.
package pki
