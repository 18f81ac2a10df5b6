# Reference values from R ordinal::clmm for hce.stats.clmm (tests/stats/test_clmm_reference.py).
#
# Regenerate from the repository root (needs R with ordinal and jsonlite; Debian:
# apt-get install r-base-core r-cran-ordinal r-cran-jsonlite):
#
#   Rscript tests/stats/r/clmm_reference.R tests/stats/data
#
# It writes tests/stats/data/clmm_reference/<design>.csv (the data, simulated here from fixed
# seeds; scores are integers 1-5) and tests/stats/data/clmm_reference.json: for every fit the
# thresholds and fixed effects with their standard errors (ordinal's vcov: the inverse of a
# numerical Hessian, deriv12 with step 1e-4), the random-effect standard deviations, the
# log-likelihood, the conditional modes with their conditional variances, max.grad and cond.H,
# plus the R and ordinal versions. Fits use ordinal's defaults (nlminb, Laplace unless nAGQ is
# given); the response is factor(score, levels = 1:5, ordered = TRUE), so a level with no
# observations is dropped by model.frame, as clmm always does.

suppressPackageStartupMessages({
  library(ordinal)
  library(jsonlite)
})
# clmm_summary(): the fields stored of each fit, shared with the other clmm reference script
source(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))),
                 "clmm_summary.R"))

args <- commandArgs(trailingOnly = TRUE)
if (length(args) != 1) stop("usage: Rscript clmm_reference.R OUT_DIR")
out_dir <- args[[1]]
data_dir <- file.path(out_dir, "clmm_reference")
dir.create(data_dir, showWarnings = FALSE, recursive = TRUE)

# Latent-scale ordinal scores: logistic noise around item (and rater) effects, cut at `cuts`.
likert <- function(latent, cuts = c(-1.5, -0.5, 0.5, 1.5)) {
  findInterval(latent, cuts) + 1L
}

# Items x conditions x attempts, unbalanced: a share of attempts missing.
judge <- function(seed, n_items, n_cond, n_att, s_item, effect, p_miss = 0.1,
                  cuts = c(-1.5, -0.5, 0.5, 1.5)) {
  set.seed(seed)
  d <- expand.grid(attempt = seq_len(n_att), condition = paste0("c", seq_len(n_cond)),
                   item = sprintf("i%02d", seq_len(n_items)), stringsAsFactors = FALSE)
  d <- d[, c("item", "condition", "attempt")]
  u <- rnorm(n_items, 0, s_item)
  cc <- match(d$condition, paste0("c", seq_len(n_cond)))
  d$x <- round(rnorm(nrow(d)), 3)
  latent <- u[match(d$item, sprintf("i%02d", seq_len(n_items)))] + effect * (cc - 1) +
    rlogis(nrow(d))
  d$score <- likert(latent, cuts)
  d$latent <- latent
  d[runif(nrow(d)) >= p_miss, ]
}

raters <- function(seed, n_items, n_raters, s_item, s_rater, p_miss = 0.15) {
  set.seed(seed)
  d <- expand.grid(rater = sprintf("r%d", seq_len(n_raters)),
                   item = sprintf("i%02d", seq_len(n_items)), stringsAsFactors = FALSE)
  d <- d[, c("item", "rater")]
  u <- rnorm(n_items, 0, s_item)
  r <- rnorm(n_raters, 0, s_rater)
  d$x <- round(rnorm(nrow(d)), 3)
  latent <- u[as.integer(factor(d$item))] + r[as.integer(factor(d$rater))] + 0.5 * d$x +
    rlogis(nrow(d))
  d$score <- likert(latent)
  d[runif(nrow(d)) >= p_miss, ]
}

designs <- list(
  likert_item = judge(101, 40, 2, 4, 1.0, 0.8),
  covariate = transform(judge(102, 30, 3, 5, 0.7, 0.5), score = likert(latent + 0.6 * x)),
  crossed = raters(107, 30, 8, 1.0, 0.8),
  empty_middle = (function() {
    d <- judge(104, 35, 2, 5, 1.2, 0.6, cuts = c(-1, -0.3, 0.3, 1))
    d[d$score != 3, ]  # a 1-5 scale on which nobody gave 3
  })(),
  small_item_variance = judge(105, 25, 2, 6, 0.05, 0.7),
  two_levels = transform(judge(106, 30, 2, 6, 1.0, 0.9), score = ifelse(score >= 3, 2L, 1L))
)

fits <- list(
  list(design = "likert_item", formula = "score ~ condition + (1 | item)", link = "logit", nAGQ = 1),
  list(design = "likert_item", formula = "score ~ condition + (1 | item)", link = "probit", nAGQ = 1),
  # ordinal 2022.11-16's C code for one scalar term (clmm.fit.ssr) swaps cloglog and loglog:
  # on likert_item it gives logLik -442.899 for link = "cloglog", where clm's definition
  # (F(x) = 1 - exp(-exp(x))), the general code (useMatrix = TRUE) and two terms all give
  # -444.979 (its link = "loglog" gives -444.980); so cloglog is fitted by the general code
  list(design = "likert_item", formula = "score ~ condition + (1 | item)", link = "cloglog", nAGQ = 1,
       useMatrix = TRUE),
  list(design = "likert_item", formula = "score ~ condition + (1 | item)", link = "logit", nAGQ = 10),
  list(design = "covariate", formula = "score ~ condition + x + (1 | item)", link = "logit", nAGQ = 1),
  list(design = "crossed", formula = "score ~ x + (1 | item) + (1 | rater)", link = "logit", nAGQ = 1),
  list(design = "crossed", formula = "score ~ 1 + (1 | item) + (1 | rater)", link = "probit", nAGQ = 1),
  list(design = "empty_middle", formula = "score ~ condition + (1 | item)", link = "logit", nAGQ = 1),
  list(design = "small_item_variance", formula = "score ~ condition + (1 | item)", link = "logit", nAGQ = 1),
  list(design = "two_levels", formula = "score ~ condition + (1 | item)", link = "logit", nAGQ = 5)
)

for (name in names(designs)) {
  d <- designs[[name]]
  d$latent <- NULL
  rownames(d) <- NULL
  write.csv(d, file.path(data_dir, paste0(name, ".csv")), row.names = FALSE)
}

out <- lapply(fits, function(f) {
  d <- read.csv(file.path(data_dir, paste0(f$design, ".csv")), stringsAsFactors = TRUE)
  d$score <- factor(d$score, levels = 1:5, ordered = TRUE)
  m <- clmm(as.formula(f$formula), data = d, link = f$link, nAGQ = f$nAGQ,
            control = clmm.control(useMatrix = isTRUE(f$useMatrix)))
  re <- ranef(m, condVar = TRUE)
  ranef_rows <- do.call(rbind, lapply(names(re), function(g) {
    data.frame(group = g, level = rownames(re[[g]]), estimate = re[[g]][, 1],
               cond_var = attr(re[[g]], "condVar")[, 1])
  }))
  fit <- clmm_summary(m)
  c(f, fit, list(ranef = ranef_rows), if (any(is.nan(fit$std_error))) {
    # ordinal's Hessian in log(sd) is singular when the sd is ~0; there the fixed-effect
    # standard errors are those of the model without the term (clm), which hce reports
    fixed_only <- clm(as.formula(sub(" \\+ \\(1 \\| item\\)", "", f$formula)), data = d,
                      link = f$link)
    list(clm_std_error = unname(sqrt(diag(vcov(fixed_only)))))
  })
})

writeLines(
  toJSON(list(r_version = R.version.string,
              ordinal_version = as.character(packageVersion("ordinal")),
              fits = out), digits = NA, auto_unbox = TRUE, pretty = TRUE),
  file.path(out_dir, "clmm_reference.json")
)
