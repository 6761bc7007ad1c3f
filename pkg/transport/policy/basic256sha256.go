package policy

import (
	"crypto"
	"crypto/sha256"
)

// URIBasic256Sha256 is the SecurityPolicy URI of Basic256Sha256.
const URIBasic256Sha256 = "http://opcfoundation.org/UA/SecurityPolicy#Basic256Sha256"

// Basic256Sha256 is SecurityPolicy Basic256Sha256 (Part 7): RSA-OAEP-SHA1
// key wrap, RSA-PKCS1-v1_5-SHA256 signatures, HMAC-SHA256, AES-256-CBC and
// P_SHA256; RSA keys of 2048 to 4096 bits; derived keys 32 (signing) + 32
// (encrypting) + 16 (IV) bytes; 32-byte nonces.
var Basic256Sha256 Policy = &rsaPolicy{
	info: Info{
		URI:                     URIBasic256Sha256,
		Name:                    "Basic256Sha256",
		NonceLength:             32,
		RSA:                     true,
		MinAsymmetricKeyBits:    2048,
		MaxAsymmetricKeyBits:    4096,
		Keys:                    KeyLengths{Signing: 32, Encrypting: 32, Block: 16},
		SymmetricSignatureSize:  sha256.Size,
		AsymmetricSignatureURI:  "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256",
		AsymmetricEncryptionURI: "http://www.w3.org/2001/04/xmlenc#rsa-oaep",
		SymmetricSignatureURI:   "http://www.w3.org/2000/09/xmldsig#hmac-sha256",
		SymmetricEncryptionURI:  "http://www.w3.org/2001/04/xmlenc#aes256-cbc",
		KeyDerivationURI:        "http://docs.oasis-open.org/ws-sx/ws-secureconversation/200512/dk/p_sha256",
	},
	asym:    rsaAlgorithms{encHash: crypto.SHA1, sigHash: crypto.SHA256},
	newHash: sha256.New,
}
