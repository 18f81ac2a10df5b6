# Reference values for hce.stats.probe_effect and hce.stats.length_bias (tests/stats/test_biases.py).
#
# Regenerate from the repository root (needs R with lme4, lmerTest, sandwich, lmtest, jsonlite):
#
#   Rscript tests/stats/r/biases_reference.R tests/stats/data
#
# It writes tests/stats/data/biases_reference/<design>.csv (designs generated here from fixed
# seeds) and tests/stats/data/biases_reference.json:
# - "probe": a probe design with 3 attempts per item and version, two conditions; lmerTest's
#   fit of y ~ effect + base + (1 | item) + (1 | ic) + (1 | cell) (REML, Satterthwaite df), the
#   row of `effect`: estimate, std_error, df, p_value; and lme4::glmer's binomial fit of the
#   0/1 verdict of another design (one condition, one attempt) with (1 | item): estimate, std_error.
# - "length": OLS of total on chars / 1000 with sandwich::vcovCL(cluster = ~item_id,
#   type = "HC1") (the CR1 correction G/(G-1) (N-1)/(N-K), statsmodels' cluster default too)
#   and lmtest::coeftest with df = G - 1: slope, std_error, p_value, ci_low, ci_high.

suppressPackageStartupMessages({
  library(lme4)
  library(lmerTest)
  library(sandwich)
  library(lmtest)
  library(jsonlite)
})

args <- commandArgs(trailingOnly = TRUE)
if (length(args) != 1) stop("usage: Rscript biases_reference.R OUT_DIR")
out_dir <- args[[1]]
data_dir <- file.path(out_dir, "biases_reference")
dir.create(data_dir, showWarnings = FALSE, recursive = TRUE)

set.seed(47)
n_items <- 25
items <- sprintf("T%02d", seq_len(n_items))
d <- expand.grid(attempt = 1:3, effect = 0:1, base = c("c1", "c2"), item_id = items, stringsAsFactors = FALSE)
ii <- match(d$item_id, items)
u <- rnorm(n_items, 0, 1.5)
v <- rnorm(n_items, 0, 0.3)
w <- matrix(rnorm(n_items * 2, 0, 0.4), n_items)
d$total <- 12 + u[ii] + 0.4 * (d$base == "c2") + (0.3 + v[ii]) * d$effect + w[cbind(ii, match(d$base, c("c1", "c2")))] +
  rnorm(nrow(d), 0, 0.8)
d$verdict <- rbinom(nrow(d), 1, plogis(-0.2 + u[ii] + 0.5 * d$effect))
d$probe_id <- ifelse(d$effect == 1, "pad", "")
d$condition_id <- ifelse(d$effect == 1, paste0(d$base, "~pad"), d$base)
d$base_condition_id <- d$base
d$ic <- paste(d$item_id, d$base)
d$cell <- paste(d$item_id, d$base, d$effect)
write.csv(d[, c("item_id", "condition_id", "base_condition_id", "probe_id", "attempt", "total", "verdict")],
          file.path(data_dir, "probe.csv"), row.names = FALSE)

m <- lmerTest::lmer(total ~ effect + base + (1 | item_id) + (1 | ic) + (1 | cell), data = d, REML = TRUE)
co <- summary(m)$coefficients["effect", ]
# The verdicts: one condition, one attempt per item and version (the model probe_effect fits then).
set.seed(470)
n_v <- 120
v_items <- sprintf("V%03d", seq_len(n_v))
b <- expand.grid(effect = 0:1, item_id = v_items, stringsAsFactors = FALSE)
b$verdict <- rbinom(nrow(b), 1, plogis(0.3 + rnorm(n_v, 0, 1.5)[match(b$item_id, v_items)] - 0.6 * b$effect))
b$probe_id <- ifelse(b$effect == 1, "swap", "")
b$condition_id <- ifelse(b$effect == 1, "c1~swap", "c1")
b$base_condition_id <- "c1"
write.csv(b[, c("item_id", "condition_id", "base_condition_id", "probe_id", "verdict")],
          file.path(data_dir, "verdict.csv"), row.names = FALSE)
g <- glmer(verdict ~ effect + (1 | item_id), data = b, family = binomial)
gco <- summary(g)$coefficients["effect", ]

set.seed(4747)
n_len <- 40
len_items <- sprintf("L%02d", seq_len(n_len))
l <- data.frame(item_id = rep(len_items, each = 3))
l$chars <- round(runif(nrow(l), 400, 5000))
lu <- rnorm(n_len, 0, 1)
l$human <- round(10 + lu[match(l$item_id, len_items)] + rnorm(nrow(l), 0, 0.5), 1)
l$total <- l$human + 0.45 * l$chars / 1000 + lu[match(l$item_id, len_items)] * 0.5 + rnorm(nrow(l), 0, 1)
write.csv(l, file.path(data_dir, "length.csv"), row.names = FALSE)

slope <- function(f) {
  fit <- lm(f, data = l)
  v <- vcovCL(fit, cluster = ~item_id, type = "HC1")
  ct <- coeftest(fit, vcov. = v, df = n_len - 1)
  ci <- coefci(fit, vcov. = v, df = n_len - 1)
  list(estimate = unname(coef(fit)[2]), std_error = unname(sqrt(v[2, 2])), p_value = unname(ct[2, 4]),
       ci_low = unname(ci[2, 1]), ci_high = unname(ci[2, 2]))
}
l$x <- l$chars / 1000
l$diff <- l$total - l$human

ref <- list(
  versions = list(R = R.version.string, lme4 = as.character(packageVersion("lme4")),
                  lmerTest = as.character(packageVersion("lmerTest")),
                  sandwich = as.character(packageVersion("sandwich"))),
  probe = list(estimate = unname(co["Estimate"]), std_error = unname(co["Std. Error"]),
               df = unname(co["df"]), p_value = unname(co["Pr(>|t|)"])),
  probe_glmer = list(estimate = unname(gco["Estimate"]), std_error = unname(gco["Std. Error"])),
  length = slope(total ~ x),
  length_truth = slope(diff ~ x)
)
write(toJSON(ref, auto_unbox = TRUE, digits = NA, pretty = TRUE), file.path(out_dir, "biases_reference.json"))
