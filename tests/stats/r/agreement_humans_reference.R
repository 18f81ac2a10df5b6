# Reference values from epiR::epi.ccc (Lin's concordance correlation coefficient, its
# z-transform and asymptotic intervals, location and scale shifts, bias correction factor,
# and the Bland-Altman limits it reports) for hce.stats.concordance and hce.stats.bland_altman
# (tests/stats/test_agreement_humans.py).
#
# epi.ccc is base R; this script sources its file from an epiR source tree (cran/epiR,
# version 2.0.94, R/epi.ccc.R) rather than needing the package installed:
#
#   Rscript tests/stats/r/agreement_humans_reference.R EPIR/R/epi.ccc.R tests/stats/data/agreement_humans_reference.json
#
# Cases: Bland & Altman's (1986, Lancet i:307-310, Table 1) peak expiratory flow rates by the
# Wright and the mini Wright meter (first reading each, 17 subjects), and six random designs
# of ours drawn from fixed seeds (stored with the results).

suppressPackageStartupMessages(library(jsonlite))
args <- commandArgs(trailingOnly = TRUE)
source(args[1])

wright <- c(494, 395, 516, 434, 476, 557, 413, 442, 650, 433, 417, 656, 267, 478, 178, 423, 427)
mini <- c(512, 430, 520, 428, 500, 600, 364, 380, 658, 445, 432, 626, 260, 477, 259, 350, 451)
cases <- list(list(name = "bland_altman_1986_pefr", a = wright, b = mini))
for (seed in 1:6) {
  set.seed(seed)
  n <- sample(25:90, 1)
  a <- round(rnorm(n, 3, 1), 3)
  b <- round(0.3 * seed / 3 + (0.7 + 0.1 * seed) * a + rnorm(n, 0, 0.3 + 0.1 * seed), 3)
  cases[[length(cases) + 1]] <- list(name = paste0("seed", seed), a = a, b = b)
}
out <- lapply(cases, function(case) {
  # epi.ccc(x, y): x = a, y = b; its Bland-Altman delta is x - y.
  z <- epi.ccc(case$a, case$b, ci = "z-transform", conf.level = 0.95)
  asym <- epi.ccc(case$a, case$b, ci = "asymptotic", conf.level = 0.95)
  c(case, list(ccc = z$rho.c$est, z_low = z$rho.c$lower, z_high = z$rho.c$upper,
               asymptotic_low = asym$rho.c$lower, asymptotic_high = asym$rho.c$upper,
               scale_shift = z$s.shift, location_shift = z$l.shift, bias_correction = z$C.b,
               ba_bias = z$sblalt$est, ba_sd = z$sblalt$delta.sd, ba_lower = z$sblalt$lower,
               ba_upper = z$sblalt$upper))
})
writeLines(toJSON(list(source = "epiR 2.0.94 R/epi.ccc.R (cran/epiR @d94f94d)", r = R.version.string,
                       cases = out), auto_unbox = TRUE, digits = NA), args[2])
