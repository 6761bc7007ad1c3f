package policy

import (
	"crypto"
	"crypto/sha256"
)

// URIAes256Sha256RsaPss is the SecurityPolicy URI of Aes256_Sha256_RsaPss.
const URIAes256Sha256RsaPss = "http://opcfoundation.org/UA/SecurityPolicy#Aes256_Sha256_RsaPss"

// Aes256Sha256RsaPss is SecurityPolicy Aes256_Sha256_RsaPss (Part 7):
// RSA-OAEP-SHA256 key wrap (MGF1-SHA256), RSA-PSS-SHA256 signatures (salt
// length 32), HMAC-SHA256, AES-256-CBC and P_SHA256; RSA keys of 2048 to
// 4096 bits; derived keys 32 (signing) + 32 (encrypting) + 16 (IV) bytes;
// 32-byte nonces.
var Aes256Sha256RsaPss Policy = &rsaPolicy{
	info: Info{
		URI:                     URIAes256Sha256RsaPss,
		Name:                    "Aes256_Sha256_RsaPss",
		NonceLength:             32,
		RSA:                     true,
		MinAsymmetricKeyBits:    2048,
		MaxAsymmetricKeyBits:    4096,
		Keys:                    KeyLengths{Signing: 32, Encrypting: 32, Block: 16},
		SymmetricSignatureSize:  sha256.Size,
		AsymmetricSignatureURI:  "http://opcfoundation.org/UA/security/rsa-pss-sha2-256",
		AsymmetricEncryptionURI: "http://opcfoundation.org/UA/security/rsa-oaep-sha2-256",
		SymmetricSignatureURI:   "http://www.w3.org/2000/09/xmldsig#hmac-sha256",
		SymmetricEncryptionURI:  "http://www.w3.org/2001/04/xmlenc#aes256-cbc",
		KeyDerivationURI:        "http://docs.oasis-open.org/ws-sx/ws-secureconversation/200512/dk/p_sha256",
	},
	asym:    rsaAlgorithms{encHash: crypto.SHA256, sigHash: crypto.SHA256, pss: true},
	newHash: sha256.New,
}
