package policy

import (
	"crypto"
	"crypto/sha1"
)

// URIBasic128Rsa15 is the SecurityPolicy URI of Basic128Rsa15.
const URIBasic128Rsa15 = "http://opcfoundation.org/UA/SecurityPolicy#Basic128Rsa15"

// Basic128Rsa15 is SecurityPolicy Basic128Rsa15 (Part 7, deprecated since
// 1.04): RSAES-PKCS1-v1_5 key wrap, RSA-PKCS1-v1_5-SHA1 signatures,
// HMAC-SHA1, AES-128-CBC and P_SHA1; RSA keys of 1024 to 2048 bits;
// derived keys 16 (signing) + 16 (encrypting) + 16 (IV) bytes; 16-byte nonces.
var Basic128Rsa15 Policy = &rsaPolicy{
	info: Info{
		URI:                     URIBasic128Rsa15,
		Name:                    "Basic128Rsa15",
		NonceLength:             16,
		RSA:                     true,
		MinAsymmetricKeyBits:    1024,
		MaxAsymmetricKeyBits:    2048,
		Keys:                    KeyLengths{Signing: 16, Encrypting: 16, Block: 16},
		SymmetricSignatureSize:  sha1.Size,
		Deprecated:              true,
		AsymmetricSignatureURI:  "http://www.w3.org/2000/09/xmldsig#rsa-sha1",
		AsymmetricEncryptionURI: "http://www.w3.org/2001/04/xmlenc#rsa-1_5",
		SymmetricSignatureURI:   "http://www.w3.org/2000/09/xmldsig#hmac-sha1",
		SymmetricEncryptionURI:  "http://www.w3.org/2001/04/xmlenc#aes128-cbc",
		KeyDerivationURI:        "http://docs.oasis-open.org/ws-sx/ws-secureconversation/200512/dk/p_sha1",
	},
	asym:    rsaAlgorithms{encHash: 0, sigHash: crypto.SHA1},
	newHash: sha1.New,
}
