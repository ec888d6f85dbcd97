# The Kafka protocol listener as a container (infra/kafka-listener.ts): src/server.ts bundled by
# esbuild, on the aws backend. Built by `cdk deploy -c kafkaListener=true` (needs Docker).
FROM node:20-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY src ./src
# As the Lambda bundles: everything but the SQLite adapter (the aws backend never loads it).
RUN npx esbuild src/server.ts --bundle --platform=node --target=node20 --format=esm \
      "--external:*/storage/sqlite-metadata-store.js" --outfile=dist/server.mjs \
      --banner:js="import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);"

FROM node:20-slim
WORKDIR /app
COPY --from=build /src/dist/server.mjs ./server.mjs
USER node
EXPOSE 9092
CMD ["node", "server.mjs", "--backend", "aws", "--scheduler-interval-ms", "0"]
