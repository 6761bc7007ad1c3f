package policy

import (
	"crypto"
	"crypto/sha256"
)

// URIAes128Sha256RsaOaep is the SecurityPolicy URI of Aes128_Sha256_RsaOaep.
const URIAes128Sha256RsaOaep = "http://opcfoundation.org/UA/SecurityPolicy#Aes128_Sha256_RsaOaep"

// Aes128Sha256RsaOaep is SecurityPolicy Aes128_Sha256_RsaOaep (Part 7):
// RSA-OAEP-SHA1 key wrap, RSA-PKCS1-v1_5-SHA256 signatures, HMAC-SHA256,
// AES-128-CBC and P_SHA256; RSA keys of 2048 to 4096 bits; derived keys
// 32 (signing) + 16 (encrypting) + 16 (IV) bytes; 32-byte nonces.
var Aes128Sha256RsaOaep Policy = &rsaPolicy{
	info: Info{
		URI:                     URIAes128Sha256RsaOaep,
		Name:                    "Aes128_Sha256_RsaOaep",
		NonceLength:             32,
		RSA:                     true,
		MinAsymmetricKeyBits:    2048,
		MaxAsymmetricKeyBits:    4096,
		Keys:                    KeyLengths{Signing: 32, Encrypting: 16, Block: 16},
		SymmetricSignatureSize:  sha256.Size,
		AsymmetricSignatureURI:  "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256",
		AsymmetricEncryptionURI: "http://www.w3.org/2001/04/xmlenc#rsa-oaep",
		SymmetricSignatureURI:   "http://www.w3.org/2000/09/xmldsig#hmac-sha256",
		SymmetricEncryptionURI:  "http://www.w3.org/2001/04/xmlenc#aes128-cbc",
		KeyDerivationURI:        "http://docs.oasis-open.org/ws-sx/ws-secureconversation/200512/dk/p_sha256",
	},
	asym:    rsaAlgorithms{encHash: crypto.SHA1, sigHash: crypto.SHA256},
	newHash: sha256.New,
}
