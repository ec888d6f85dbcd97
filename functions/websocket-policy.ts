/** The answer a WebSocket API's REQUEST authorizer must give: an IAM policy on the $connect route. */
import type { APIGatewayAuthorizerResult } from 'aws-lambda';

export const connectPolicy = (
  allow: boolean,
  methodArn: string,
  principalId = 'consumer',
): APIGatewayAuthorizerResult => ({
  principalId,
  policyDocument: {
    Version: '2012-10-17',
    Statement: [{ Action: 'execute-api:Invoke', Effect: allow ? 'Allow' : 'Deny', Resource: methodArn }],
  },
});
