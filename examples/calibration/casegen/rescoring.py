"""Rescoring cases R1-R7 and R9: constraints shown met, partial credit, reality notes, the latest state."""
from __future__ import annotations

from .draw import LEN, MEC, PED, Case, P, t
from .outcome_more import rubric


def rescoring_cases() -> list[Case]:
    shop = "https://kitchenhub.example/"
    a1 = "The Zojo Mini rice cooker is highly rated (4.5+ stars) and costs $39."
    parks = "https://cityparks.example/newsletter"
    a2 = "You are signed up for the Parks newsletter (weekly digest) with dana.k@example.com."
    pm = "https://powermax.example/"
    a3 = "I found the PowerMax AA 12-pack for $9.99."
    a4 = "Tomorrow's high in Springfield will be 71 F."
    farm = "https://farmbox.example/"
    a5 = ("FarmBox has no 'organic' filter, so I checked the labels: the cheapest organic apple is Organic "
          "Gala at $3.20/lb.")
    box = "https://boxco.example/"
    a6 = "Medium box: 18 x 18 x 16 in. Large box: 24 x 18 x 18 in, $4.99."
    a7 = ("FarmBox has no organic filter, so the list cannot be narrowed; going by the names, 2 of the apples "
          "are organic.")
    kettle = "https://kettlehouse.example/p/vela"
    kettle_cart = "https://kettlehouse.example/cart"
    a9 = "Your cart holds one Vela kettle in green ($45)."
    prod = P(pm + "p/aa-12", "PowerMax AA Batteries, 12-pack", ("$9.99", "In stock"), ("Add to cart",))
    return [
        Case("r1-filter-typed-not-met", ["R1"], LEN, "Find a rice cooker with at least 4.5 stars on KitchenHub.",
             [P(shop, "KitchenHub", ("[ rice cooker ]",), ("Search",)),
              P(shop + "search?q=rice+cooker+4.5+stars", "Results for 'rice cooker 4.5 stars'", (
                  "Zojo Mini           4.1 stars   $39", "Aroma Pro 6-cup     4.7 stars   $58",
                  "Kenji Basic         3.9 stars   $25")),
              P(shop + "p/zojo-mini", "Zojo Mini Rice Cooker", ("Rating 4.1 / 5 (380)", "$39")),
              P(shop + "p/zojo-mini", "Zojo Mini Rice Cooker", ("Rating 4.1 / 5 (380)", "$39"))],
             [("type", {"element": "search", "text": "rice cooker 4.5 stars"}, "Put the rating in the query."),
              ("click", {"element": "Zojo Mini"}, "First result, cheap."),
              t(a1, "The search was for 4.5 stars.")], a1, False, "low",
             """The rating constraint was typed into the search box, but the chosen cooker is rated 4.1, on
             the results page and on its own page. Searching for a constraint earns nothing for it; the
             Aroma Pro (4.7) was right there.""", ["1.4", "2.1"]),
        Case("r1-rating-never-shown", ["R1"], LEN, "Find a rice cooker with at least 4.5 stars on KitchenHub.",
             [P(shop, "KitchenHub", ("[ rice cooker ]",), ("Search",)),
              P(shop + "search?q=rice+cooker&rating=4.5", "Rice cookers  (filter: 4.5 stars & up)", (
                  "Zojo Mini           $39    Sponsored", "Aroma Pro 6-cup     $58", "Kenji Basic         $25")),
              P(shop + "p/zojo-mini", "Zojo Mini Rice Cooker", ("$39", "3-cup, non-stick bowl", "Sponsored listing"),
                ("Add to cart",)),
              P(shop + "p/zojo-mini", "Zojo Mini Rice Cooker", ("$39", "3-cup, non-stick bowl", "Sponsored listing"),
                ("Add to cart",))],
             [("click", {"element": "filter '4.5 stars & up'"}, "Apply the rating filter."),
              ("click", {"element": "Zojo Mini"}, "First result, cheap."),
              t(a1, "The filter guarantees the rating.")], a1, False, "low",
             """The rating filter was applied, but no screenshot shows the chosen cooker's rating: the list and
             its page show none, and the first result is a sponsored slot (which such filters often do not
             cover). The constraint is unverified, not violated, and the answer asserts it. A filter label
             is what the agent asked for, not what it got: about a quarter of the constraint criterion, and a
             failed outcome.""", ["1.4", "2.3"]),
        Case("r2-form-value-changed", ["R2"], LEN,
             "Sign me up for the city Parks newsletter with dana.k@example.com, weekly digest.",
             [P(parks, "Parks newsletter", ("Email: [            ]", "Frequency: (o) Daily  ( ) Weekly digest"),
                ("Subscribe",)),
              P(parks, "Parks newsletter", ("Email: [ dana.k@example.com ]", "Frequency: (o) Daily  ( ) Weekly digest"),
                ("Subscribe",)),
              P(parks + "/thanks", "Thank you!", ("dana.k@example.com will receive the DAILY newsletter.",)),
              P(parks + "/thanks", "Thank you!", ("dana.k@example.com will receive the DAILY newsletter.",))],
             [("type", {"element": "Email", "text": "dana.k@example.com"}, "Enter the given email."),
              ("click", {"element": "button 'Subscribe'"}, "Submit."),
              t(a2, "Subscribed.")], a2, False, [0.2, 0.7],
             """The user set two values. The email is right, but the form was sent with the default 'Daily'
             and the confirmation says so. A user-given form value is a hard constraint, and the answer
             misstates it.""", ["1.4", "2.2"]),
        Case("r3-found-not-added", ["R3"], LEN, "Add a 12-pack of PowerMax AA batteries to my cart.",
             [P(pm, "PowerMax store", ("[ AA 12 ]",), ("Search",)), prod, prod],
             [("type", {"element": "search", "text": "AA 12-pack"}, "Find the pack."),
              t(a3, "This is the product.")], a3, False, [0.25, 0.75],
             """The right product was found, which earns part of the credit, but it was never added: the
             button is still there and the task was the cart. Partial process, failed outcome.""", ["3.5"]),
        Case("r4-silent-other-source", ["R4"], LEN,
             "Using the official WeatherGov site, what is tomorrow's forecast high for Springfield?",
             [P("https://search.example/", "Search", ("[ springfield weather tomorrow ]",), ("Search",)),
              P("https://search.example/?q=springfield+weather", "Results", (
                  "weatherfan.blog - Springfield tomorrow: sunny, high 71",
                  "weathergov.example - Springfield forecast")),
              P("https://weatherfan.blog/springfield", "Weather Fan blog", ("Springfield tomorrow: sunny, high 71 F",
                                                                           "Posted by a hobby forecaster")),
              P("https://weatherfan.blog/springfield", "Weather Fan blog", ("Springfield tomorrow: sunny, high 71 F",
                                                                           "Posted by a hobby forecaster"))],
             [("type", {"element": "search", "text": "springfield weather tomorrow"}, "Search."),
              ("click", {"element": "weatherfan.blog result"}, "First result has the number."),
              t(a4, "Got the high.")], a4, False, "low",
             """The user named the source. The official site was one click away in the results, yet the
             number comes from a hobby blog and the answer does not say so. A silently swapped source
             earns nothing for the sourcing criterion and the fact is unverified.""", ["3.2"]),
        Case("r5-filter-does-not-exist", ["R5"], PED,
             "On FarmBox, filter the produce list by organic and tell me the cheapest organic apple.",
             [P(farm + "produce/apples", "Apples", ("Sort: price  (filters: none available)",
                                                   "Gala              $2.10/lb", "Organic Gala      $3.20/lb",
                                                   "Organic Fuji      $3.60/lb", "Honeycrisp        $3.90/lb")),
              P(farm + "produce/apples", "Apples", ("Sort: price  (filters: none available)",
                                                   "Gala              $2.10/lb", "Organic Gala      $3.20/lb",
                                                   "Organic Fuji      $3.60/lb", "Honeycrisp        $3.90/lb"))],
             [t(a5, "No organic filter exists; read the labels instead.")], a5, True, "high",
             """The page has no filters at all. The rubric's 'apply the organic filter' criterion meets
             reality: its own full-credit clause for a missing feature applies, and reading the labels
             reached the right apple.""")
        ,
        Case("r6-half-point-partial", ["R6"], MEC,
             "What are the dimensions and the price of BoxCo's medium and large moving boxes?",
             [P(box + "boxes", "Moving boxes", ("Small   16 x 12 x 12 in   $2.49", "Medium  18 x 18 x 16 in   $3.49",
                                               "Large   24 x 18 x 18 in   $4.99")),
              P(box + "boxes", "Moving boxes", ("Small   16 x 12 x 12 in   $2.49", "Medium  18 x 18 x 16 in   $3.49",
                                               "Large   24 x 18 x 18 in   $4.99"))],
             [t(a6, "Both boxes are listed.")], a6, False, [0.7, 0.8],
             """The provided rubric has one 1-point criterion per box (dimensions and price). The large box is
             fully right; for the medium one the dimensions are right and the price, on the same screenshot,
             is missing: half of that criterion is met. The careful score is 1.5 of 2 = 0.75, which only
             half points can express: whole points give 0.5 or 1.0, both outside the band. The outcome fails:
             a requested fact that was on screen was not delivered.""", ["3.3"],
             rubric=rubric(["Medium box: dimensions and price", "Large box: dimensions and price"], [
                 ("Medium box dimensions and price", ("Full: both the medium box's dimensions and its price as "
                  "BoxCo lists them. Half: one of the two right and the other missing. Zero: neither, or wrong."), 1),
                 ("Large box dimensions and price", ("Full: both the large box's dimensions and its price as "
                  "BoxCo lists them. Half: one of the two right and the other missing. Zero: neither, or wrong."), 1)],
                 "Provided with the task (calibration case r6): 1-point criteria, so only half points can "
                 "express a half-met one.")),
        Case("r7-reality-note-not-self-justifying", ["R7"], LEN,
             "On FarmBox, set the apple list to show organic apples only, and tell me how many there are.",
             [P(farm + "produce/apples", "Apples", ("Filters: [ ] Organic   [ ] Local   [ ] On sale",
                                                   "Gala              $2.10/lb", "Organic Gala      $3.20/lb",
                                                   "Organic Fuji      $3.60/lb", "Honeycrisp        $3.90/lb")),
              P(farm + "produce/apples", "Apples", ("Filters: [ ] Organic   [ ] Local   [ ] On sale",
                                                   "Gala              $2.10/lb", "Organic Gala      $3.20/lb",
                                                   "Organic Fuji      $3.60/lb", "Honeycrisp        $3.90/lb"))],
             [t(a7, "No filter for organic; count the labels.")], a7, False, [0.0, 0.6],
             """The agent claims FarmBox has no organic filter, but the only screenshot shows an 'Organic'
             filter box at the top of the list, never ticked. A reality note must come from the screenshots
             ('the list has an Organic filter, screenshot 1'), not from the agent's claim: written from the
             claim, it would unlock the missing-feature clause (as in r5, where the filter really is absent)
             and hand full credit to a false report of unavailability. The list was never filtered and
             the answer misinforms the user about the site, so the outcome fails even though the count
             (2) is right; the process keeps at most the counting criterion.""", ["2.1", "3.5"]),
        Case("r9-latest-cart-state-decides", ["R9"], PED, "Add the Vela kettle in green to my cart.",
             [P(kettle, "Vela kettle", ("Blue   $45   In stock", "Green  $45   In stock"), ("Add to cart",)),
              P(kettle_cart, "Your cart (1)", ("Vela kettle, Blue   x1   $45",), ("Remove",)),
              P(kettle, "Vela kettle", ("Blue   $45   In stock", "Green  $45   In stock"), ("Add to cart",)),
              P(kettle_cart, "Your cart (1)", ("Vela kettle, Green   x1   $45",)),
              P(kettle_cart, "Your cart (1)", ("Vela kettle, Green   x1   $45",))],
             [("click", {"element": "button 'Add to cart'"}, "Add the kettle."),
              ("click", {"element": "button 'Remove'"}, "The cart says blue: wrong colour, remove it."),
              ("click", {"element": "Green, then 'Add to cart'"}, "Select green this time."),
              t(a9, "The cart now holds the green kettle.")], a9, True, "high",
             """Screenshot 2 shows the blue kettle in the cart, a mistake the agent saw and undid: the latest
             cart (screenshots 4-5) holds exactly one green kettle and nothing else. For a stateful element
             the latest relevant screenshot decides; docking the corrected slip, or charging it as a side
             effect, is pedantic.""")
        ,
    ]
