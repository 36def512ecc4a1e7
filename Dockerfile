FROM node:20-slim
WORKDIR /app
# Dependencies first, so source edits do not invalidate the npm ci layer; tsx (a dependency) runs
# the TypeScript entry points, so dev dependencies (test tools) stay out of the image.
COPY package*.json ./
RUN npm ci --omit=dev
COPY . .
USER node
# docker-compose.yml names the harness module: workers/worker.ts <module>, workers/sweeper.ts <module>
CMD ["npx", "tsx", "workers/worker.ts", "scripts/demo-harness.ts"]
