# Two stages: the build stage compiles TypeScript (dev dependencies: typescript); the image runs the
# compiled JavaScript in dist/ with production dependencies only (no tsx, no test tools).
FROM node:20-slim AS build
WORKDIR /app
COPY package*.json ./
RUN npm ci --ignore-scripts
COPY tsconfig*.json ./
COPY src ./src
# the build embeds src/log/commands/*.lua in lua.generated.ts first (scripts/generateLua.ts)
COPY scripts/generateLua.ts ./scripts/
COPY scripts/lib/lua.ts ./scripts/lib/
RUN npm run build

FROM node:20-slim
WORKDIR /app
ENV NODE_ENV=production
# Dependencies first, so a source edit does not invalidate the npm ci layer.
COPY package*.json ./
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY bin ./bin
# Your harness module goes here: a .js/.mjs module (or a package export) that imports 'durable-harness'.
COPY examples/checkout ./examples/checkout
USER node
# docker-compose.yml runs `harness worker <module>` and `harness sweep <module>` on it.
ENTRYPOINT ["node", "bin/harness.js"]
CMD ["worker", "examples/checkout/harness.mjs"]
