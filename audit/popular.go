package audit

import (
	"strings"
	"sync"
)

// popularNPM and popularCrates are the names DEP016 measures dependency names
// against: widely depended-upon packages and the look-alikes that are
// legitimate packages themselves (so they are not reported).
// They are built on first use, not at process start.
var (
	popularNPM    = sync.OnceValue(func() popularSet { return newPopularSet(popularNPMList) })
	popularCrates = sync.OnceValue(func() popularSet { return newPopularSet(popularCratesList) })
)

// popularSet is a name list with each name's character mask precomputed.
type popularSet struct {
	has   map[string]bool
	names []popularName
}

type popularName struct {
	name string
	mask uint64
}

func newPopularSet(list string) popularSet {
	s := popularSet{has: map[string]bool{}}
	for _, w := range strings.Fields(list) {
		if !s.has[w] {
			s.has[w] = true
			s.names = append(s.names, popularName{name: w, mask: charMask(w)})
		}
	}
	return s
}

const popularNPMList = `
react react-dom preact redux react-redux vue vuex angular svelte next nuxt express koa fastify hapi
lodash underscore ramda axios request node-fetch got superagent ky cross-fetch isomorphic-fetch
moment dayjs date-fns luxon chalk colors kleur picocolors commander yargs minimist meow inquirer prompts ora
debug ms uuid nanoid classnames clsx dotenv cross-env rimraf mkdirp glob minimatch fast-glob globby chokidar
fs-extra graceful-fs semver async bluebird rxjs tslib typescript ts-node tsx esbuild webpack rollup vite
parcel babel-core @babel/core eslint prettier jest mocha chai sinon vitest ava tap jasmine karma cypress
puppeteer playwright jquery bootstrap tailwindcss postcss autoprefixer sass less styled-components
body-parser cookie-parser cors helmet morgan multer passport jsonwebtoken bcrypt bcryptjs mongoose
mongodb mysql mysql2 pg sequelize typeorm prisma redis ioredis socket.io ws graphql apollo-server
electron nodemon pm2 concurrently husky lint-staged yaml js-yaml xml2js cheerio jsdom marked
highlight.js qs querystring body ua-parser-js coa rc event-stream eslint-scope colors faker
node-ipc left-pad is-promise core-js regenerator-runtime whatwg-fetch web-vitals zod joi yup ajv
immer mobx zustand jotai recoil formik react-router react-router-dom history three d3 chart.js
sharp canvas bufferutil utf-8-validate node-gyp node-sass fsevents esm shelljs execa cross-spawn
which tar archiver adm-zip unzipper form-data mime mime-types iconv-lite buffer events util path
crypto-js bn.js ethers web3 chokidar-cli serve http-server live-server nx turbo lerna
color prompt enquirer cookie cookies del open opn ora boxen table cli-table cli-table3 listr listr2
pino winston bunyan nodemailer undici hono elysia picomatch micromatch anymatch braces fill-range
to-regex-range is-number isobject kind-of readdirp lru-cache ini ignore acorn espree esprima estraverse
esutils kleur colorette browserslist globals jsdom marked lodash.merge lodash.get react-is mime-db
css-loader style-loader sass-loader babel-loader ts-loader file-loader url-loader postcss-loader ts-jest
dotenv-cli moment-timezone express-session koa-router reselect valibot arktype cpy ajv-formats
`

const popularCratesList = `
serde serde_json serde_derive tokio rand regex clap log env_logger tracing anyhow thiserror syn quote
proc-macro2 libc lazy_static once_cell futures reqwest hyper chrono time itertools bytes base64
hex sha2 md5 ring rustls openssl url uuid bitflags cfg-if memchr num-traits byteorder parking_lot
crossbeam rayon smallvec indexmap hashbrown walkdir glob tempfile dirs toml cc bindgen pkg-config
ureq curl actix-web axum warp rocket diesel sqlx tonic prost
`
