// Opens an HMAC secret the database sealed to the broker's OpenPGP public key (pgcrypto
// pgp_pub_encrypt). The database never holds the private key, so it is value-blind (000 §5).
// deno-lint-ignore no-import-prefix -- pinned npm: specifiers are the project's import rule
import * as openpgp from 'npm:openpgp@6.3.2';
import { BrokerError } from './broker-error.ts';
import type { BrokerConfig } from './config.ts';
import { DEV_SEALING_PRIVATE_KEY } from './dev-sealing-key.ts';

export class SecretUnsealer {
  private privateKey: Promise<openpgp.PrivateKey> | undefined;
  /** Unsealed secrets by ciphertext, for the life of the isolate (one RSA decryption each). */
  private readonly opened = new Map<string, Promise<string>>();
  private readonly armoredKey: string | undefined;

  constructor(config: BrokerConfig) {
    this.armoredKey = config.secretKey ??
      (config.isLocalStack ? DEV_SEALING_PRIVATE_KEY : undefined);
  }

  unseal(sealedBase64: string): Promise<string> {
    let secret = this.opened.get(sealedBase64);
    if (!secret) {
      secret = this.decrypt(sealedBase64);
      this.opened.set(sealedBase64, secret);
      secret.catch(() => this.opened.delete(sealedBase64));
    }
    return secret;
  }

  private async decrypt(sealedBase64: string): Promise<string> {
    if (!this.armoredKey) {
      throw new BrokerError('server_error', 'FEDERATION_SECRET_KEY is not set');
    }
    this.privateKey ??= openpgp.readPrivateKey({ armoredKey: this.armoredKey });
    const binaryMessage = Uint8Array.from(atob(sealedBase64), (char) => char.charCodeAt(0));
    try {
      const message = await openpgp.readMessage({ binaryMessage });
      const { data } = await openpgp.decrypt({
        message,
        decryptionKeys: await this.privateKey,
        format: 'binary',
      });
      return new TextDecoder().decode(data as Uint8Array);
    } catch (cause) {
      throw new BrokerError('server_error', 'sealed secret cannot be opened', { cause });
    }
  }
}
