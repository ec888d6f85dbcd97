/**
 * The one way out to a push subscriber: API Gateway's `@connections` API (PostToConnection) on
 * AWS, the local server's equivalent route elsewhere. Domain code sees only this port; the adapters
 * live in src/storage (AWS SDK) and src/push/http-connection-poster.ts.
 */
export interface ConnectionPoster {
  /**
   * Sends one text message to a connection held by the endpoint (the WebSocket stage URL, or the
   * local server's origin). `gone`: the connection no longer exists (API Gateway's 410), so its
   * subscriptions can go. Any other failure throws; the subscriber's fallback poll covers it.
   */
  post(endpoint: string, connectionId: string, message: string): Promise<'delivered' | 'gone'>;
}
