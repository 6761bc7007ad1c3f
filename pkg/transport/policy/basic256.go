package policy

import (
	"crypto"
	"crypto/sha1"
)

// URIBasic256 is the SecurityPolicy URI of Basic256.
const URIBasic256 = "http://opcfoundation.org/UA/SecurityPolicy#Basic256"

// Basic256 is SecurityPolicy Basic256 (Part 7, deprecated since 1.04):
// RSA-OAEP-SHA1 key wrap, RSA-PKCS1-v1_5-SHA1 signatures, HMAC-SHA1,
// AES-256-CBC and P_SHA1; RSA keys of 1024 to 2048 bits; derived keys
// 24 (signing) + 32 (encrypting) + 16 (IV) bytes; 32-byte nonces.
var Basic256 Policy = &rsaPolicy{
	info: Info{
		URI:                     URIBasic256,
		Name:                    "Basic256",
		NonceLength:             32,
		RSA:                     true,
		MinAsymmetricKeyBits:    1024,
		MaxAsymmetricKeyBits:    2048,
		Keys:                    KeyLengths{Signing: 24, Encrypting: 32, Block: 16},
		SymmetricSignatureSize:  sha1.Size,
		Deprecated:              true,
		AsymmetricSignatureURI:  "http://www.w3.org/2000/09/xmldsig#rsa-sha1",
		AsymmetricEncryptionURI: "http://www.w3.org/2001/04/xmlenc#rsa-oaep",
		SymmetricSignatureURI:   "http://www.w3.org/2000/09/xmldsig#hmac-sha1",
		SymmetricEncryptionURI:  "http://www.w3.org/2001/04/xmlenc#aes256-cbc",
		KeyDerivationURI:        "http://docs.oasis-open.org/ws-sx/ws-secureconversation/200512/dk/p_sha1",
	},
	asym:    rsaAlgorithms{encHash: crypto.SHA1, sigHash: crypto.SHA1},
	newHash: sha1.New,
}
