/**
 * The AWS SDK's default credential provider as the Lambda bundles have it: the Lambda runtime
 * hands a function its role's credentials in environment variables (AWS_ACCESS_KEY_ID,
 * AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), or, with SnapStart, through a container credentials
 * endpoint (AWS_CONTAINER_CREDENTIALS_FULL_URI and its token). The SDK's own chain
 * (`@aws-sdk/credential-provider-node`) tries the environment first too, but also brings the
 * profile, SSO, login, process and web identity providers with their STS/SSO clients (about 90 KB
 * of each bundle, compiled at every cold start) that a Lambda never reaches. esbuild aliases that
 * package to this module in the Lambda bundles only (infra/log-functions.ts
 * CREDENTIAL_PROVIDER_ALIAS); the local server and the CLI keep the full chain.
 *
 * Same export and call as the package's: the clients call `defaultProvider(init)` and memoize the
 * provider themselves (refreshed before `expiration`).
 */
import { fromEnv } from '@aws-sdk/credential-provider-env';
import { fromHttp } from '@aws-sdk/credential-provider-http';
import { chain, CredentialsProviderError } from '@smithy/core/config';
import type { AwsCredentialIdentityProvider, Logger } from '@smithy/types';

export function defaultProvider(init: { logger?: Logger } = {}): AwsCredentialIdentityProvider {
  // fromHttp throws at once when no endpoint is set: made only when the environment has none.
  return chain(
    fromEnv(init),
    () => fromHttp(init)(),
    async () => {
      throw new CredentialsProviderError(
        'No credentials in the environment (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY) or from a container credentials endpoint',
        { tryNextLink: false, ...(init.logger ? { logger: init.logger } : {}) },
      );
    },
  );
}
