FROM node:20-slim
WORKDIR /app
# Dependencies first, so source edits do not invalidate the npm ci layer.
COPY package*.json ./
RUN npm ci
COPY . .
CMD ["npx", "tsx", "workers/worker.ts"]
