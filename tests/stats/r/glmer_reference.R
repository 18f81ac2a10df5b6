# Reference values from R lme4::glmer for hce.stats.glmer (tests/stats/test_glmer_reference.py).
#
# Regenerate from the repository root (needs R with lme4 and jsonlite; Debian:
# apt-get install r-base-core r-cran-lme4):
#
#   Rscript tests/stats/r/glmer_reference.R tests/stats/data
#
# It writes tests/stats/data/glmer_reference/<design>.csv (binary, proportion and count designs
# generated here from fixed seeds) and tests/stats/data/glmer_reference.json: for every fit
# (Laplace and nAGQ = 10 where lme4 allows it) the fixed effects and their standard errors,
# theta, as.data.frame(VarCorr(m)), logLik, the conditional modes, isSingular and lme4's
# messages, plus the R and lme4 versions.
#
# Each model is fitted twice. "tight": PIRLS converged to tolPwrss = 1e-13 and BOBYQA to 1e-10,
# so the stored optimum is the optimum of the Laplace (or quadrature) deviance itself. lme4's
# default (tolPwrss = 1e-7) stops PIRLS while the conditional modes still move by ~1e-3, and
# takes log|L|^2 from the weights of the previous PIRLS iterate, so its deviance differs from the
# converged one by up to ~1e-3 and its optimum moves by up to ~1e-3 with it: "default" stores
# that everyday answer too.

suppressPackageStartupMessages({
  library(lme4)
  library(jsonlite)
})

args <- commandArgs(trailingOnly = TRUE)
if (length(args) != 1) stop("usage: Rscript glmer_reference.R OUT_DIR")
out_dir <- args[[1]]
data_dir <- file.path(out_dir, "glmer_reference")
dir.create(data_dir, showWarnings = FALSE, recursive = TRUE)

tight <- glmerControl(tolPwrss = 1e-13, optimizer = c("bobyqa", "bobyqa"),
                      optCtrl = list(rhoend = 1e-10, maxfun = 1e5))

# A judge study: items x conditions x attempts with 0/1 verdicts, some attempts missing.
verdicts <- function(seed, n_items, n_cond, n_att, p_miss, s_item, s_ic, b0 = 0.2) {
  set.seed(seed)
  items <- sprintf("i%03d", seq_len(n_items))
  conds <- paste0("c", seq_len(n_cond))
  d <- expand.grid(attempt = seq_len(n_att), condition = conds, item_id = items,
                   stringsAsFactors = FALSE)[, c("item_id", "condition", "attempt")]
  ii <- match(d$item_id, items)
  cc <- match(d$condition, conds)
  u <- rnorm(n_items, 0, s_item)
  v <- matrix(rnorm(n_items * n_cond, 0, s_ic), n_items)
  eta <- b0 + 0.4 * (cc - 1) - 0.3 * (cc == n_cond) + u[ii] + v[cbind(ii, cc)]
  d$verdict <- rbinom(nrow(d), 1, plogis(eta))
  d[runif(nrow(d)) >= p_miss, ]
}

# Experiment 4: segments of replies coded 0/1 (a code present or not), replies from conditions.
segments <- function(seed, n_replies, max_seg, s_reply) {
  set.seed(seed)
  n_seg <- 1 + sample.int(max_seg, n_replies, replace = TRUE)
  reply <- rep(sprintf("r%03d", seq_len(n_replies)), n_seg)
  cond <- rep(sample(c("plain", "structured"), n_replies, replace = TRUE), n_seg)
  u <- rnorm(n_replies, 0, s_reply)
  ri <- match(reply, sprintf("r%03d", seq_len(n_replies)))
  code <- rbinom(length(reply), 1, plogis(-0.5 + 0.7 * (cond == "structured") + u[ri]))
  data.frame(reply_id = reply, condition = cond, segment = sequence(n_seg), code = code)
}

with_covariate <- function(seed, n_items, n_att) {
  set.seed(seed)
  d <- data.frame(item_id = rep(sprintf("i%03d", seq_len(n_items)), each = n_att),
                  attempt = rep(seq_len(n_att), n_items))
  d$length_z <- round(rnorm(nrow(d)), 3)
  d$condition <- sample(c("a", "b"), nrow(d), replace = TRUE)
  u <- rnorm(n_items, 0, 0.8)
  ii <- match(d$item_id, sprintf("i%03d", seq_len(n_items)))
  d$verdict <- rbinom(nrow(d), 1, plogis(0.3 + 0.6 * d$length_z - 0.4 * (d$condition == "b") + u[ii]))
  d
}

proportions <- function(seed, n_items) {
  set.seed(seed)
  d <- expand.grid(condition = c("a", "b", "c"), item_id = sprintf("i%02d", seq_len(n_items)),
                   stringsAsFactors = FALSE)
  d$trials <- sample(3:12, nrow(d), replace = TRUE)
  u <- rnorm(n_items, 0, 0.7)
  ii <- match(d$item_id, sprintf("i%02d", seq_len(n_items)))
  d$passes <- rbinom(nrow(d), d$trials, plogis(-0.2 + 0.5 * (d$condition == "b") + u[ii]))
  d$fails <- d$trials - d$passes
  d$share <- d$passes / d$trials
  d
}

counts <- function(seed, n_items, n_att) {
  set.seed(seed)
  d <- data.frame(item_id = rep(sprintf("i%02d", seq_len(n_items)), each = n_att))
  d$condition <- rep(c("a", "b"), length.out = nrow(d))
  u <- rnorm(n_items, 0, 0.5)
  ii <- match(d$item_id, sprintf("i%02d", seq_len(n_items)))
  d$errors <- rpois(nrow(d), exp(0.4 + 0.3 * (d$condition == "b") + u[ii]))
  d
}

slopes <- function(seed, n_items, n_att) {
  set.seed(seed)
  d <- data.frame(item_id = rep(sprintf("i%02d", seq_len(n_items)), each = n_att))
  d$x <- round(rnorm(nrow(d)), 3)
  ii <- match(d$item_id, sprintf("i%02d", seq_len(n_items)))
  u0 <- rnorm(n_items, 0, 1)
  u1 <- 0.4 * u0 + rnorm(n_items, 0, 0.6)
  d$verdict <- rbinom(nrow(d), 1, plogis(0.2 + 0.8 * d$x + u0[ii] + u1[ii] * d$x))
  d
}

designs <- list(
  intercept = verdicts(101, 40, 3, 4, 0.1, 1.0, 0.0),
  nested = verdicts(102, 60, 4, 5, 0.1, 1.0, 0.6),
  crossed = verdicts(103, 50, 6, 3, 0.15, 0.9, 0.0),
  segments = segments(104, 80, 8, 1.2),
  covariate = with_covariate(105, 50, 6),
  small_variance = verdicts(106, 30, 2, 4, 0.0, 0.05, 0.0),
  proportions = proportions(107, 25),
  counts = counts(108, 30, 5),
  slopes = slopes(109, 40, 12)
)

# design, formula, family, link, nAGQ values, weights column
fits <- list(
  list("intercept", "verdict ~ condition + (1 | item_id)", "binomial", "logit", c(1, 10), NULL),
  list("intercept", "verdict ~ condition + (1 | item_id)", "binomial", "probit", c(1, 10), NULL),
  list("nested", "verdict ~ condition + (1 | item_id) + (1 | item_id:condition)", "binomial", "logit", 1, NULL),
  list("crossed", "verdict ~ 1 + (1 | item_id) + (1 | condition)", "binomial", "logit", 1, NULL),
  list("segments", "code ~ condition + (1 | reply_id)", "binomial", "logit", c(1, 10), NULL),
  list("covariate", "verdict ~ length_z + condition + (1 | item_id)", "binomial", "logit", c(1, 10), NULL),
  list("small_variance", "verdict ~ condition + (1 | item_id)", "binomial", "logit", 1, NULL),
  list("proportions", "share ~ condition + (1 | item_id)", "binomial", "logit", c(1, 10), "trials"),
  list("proportions", "cbind(passes, fails) ~ condition + (1 | item_id)", "binomial", "logit", 1, NULL),
  list("counts", "errors ~ condition + (1 | item_id)", "poisson", "log", c(1, 10), NULL),
  list("slopes", "verdict ~ x + (x | item_id)", "binomial", "logit", 1, NULL),
  list("slopes", "verdict ~ x + (x || item_id)", "binomial", "logit", 1, NULL)
)

summarise <- function(m) {
  vc <- as.data.frame(VarCorr(m))
  re <- as.data.frame(ranef(m))
  list(
    loglik = as.numeric(logLik(m)),
    theta = unname(getME(m, "theta")),
    fixef = data.frame(term = names(fixef(m)), estimate = unname(fixef(m)),
                       std_error = unname(sqrt(diag(as.matrix(vcov(m)))))),
    varcorr = data.frame(group = vc$grp, var1 = vc$var1, var2 = vc$var2, vcov = vc$vcov,
                         sdcor = vc$sdcor),
    ranef = data.frame(group = as.character(re$grpvar), term = as.character(re$term),
                       level = as.character(re$grp), estimate = re$condval),
    singular = isSingular(m),
    messages = as.list(unlist(m@optinfo$conv$lme4$messages))
  )
}

out <- list()
for (spec in fits) {
  name <- spec[[1]]
  d <- designs[[name]]
  write.csv(d, file.path(data_dir, paste0(name, ".csv")), row.names = FALSE)
  fam <- get(spec[[3]])(link = spec[[4]])
  for (q in spec[[5]]) {
    args <- list(formula = as.formula(spec[[2]]), data = d, family = fam, nAGQ = q)
    if (!is.null(spec[[6]])) args$weights <- d[[spec[[6]]]]
    fit_tight <- do.call(glmer, c(args, list(control = tight)))
    fit_default <- do.call(glmer, args)
    out[[length(out) + 1]] <- list(
      design = name, formula = spec[[2]], family = spec[[3]], link = spec[[4]], nAGQ = q,
      weights = if (is.null(spec[[6]])) NA else spec[[6]],
      tight = summarise(fit_tight), default = summarise(fit_default)
    )
  }
}

writeLines(
  toJSON(list(R = R.version.string, lme4 = as.character(packageVersion("lme4")),
              fits = out), digits = NA, auto_unbox = TRUE, pretty = TRUE, na = "null"),
  file.path(out_dir, "glmer_reference.json")
)
