"""Generate the calibration suite: small synthetic runs, each embodying one judging rule.

Run from the repository root: `python examples/calibration/make_calibration.py`. The output is
committed; rerun only when a case changes (the output is byte-reproducible). Every case folder
`<rule-id>-<slug>/` holds a native trajectory (`trajectory.json` + palette PNG pages) and
`expected.json`, the verdict a careful human gives: rule ids tested, outcome, process band
("high" >= 0.8, "mid" in [0.5, 0.8), "low" < 0.5, or an explicit [lo, hi]), the diagnosis codes
that should appear (any one of them is enough), and why.

`side` says which judge the case traps: "lenient-trap" (a lenient judge passes a failure),
"pedantic-trap" (a pedantic judge fails a success) or "mechanism" (a pipeline rule: what the judge
is shown, how faults are charged). All shops, sites, people and numbers are invented.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _draw import Case, P, RunStatus, write_case

OUT = Path(__file__).resolve().parent
LEN, PED, MEC = "lenient-trap", "pedantic-trap", "mechanism"


def t(answer: str, thought: str) -> tuple[str, dict, str]:
    return ("terminate", {"answer": answer}, thought)


def outcome_cases() -> list[Case]:
    fees = P("https://aeroline.example/fees/baggage", "Baggage fees", (
        "Domestic routes (e.g. Denver - Austin):", "  1st checked bag   $35", "  2nd checked bag   $45",
        "  3rd checked bag   $150", "Carry-on bag: free"))
    a1 = "The first checked bag on AeroLine from Denver to Austin costs $45."
    shoe = "https://runshop.example/p/trailrunner-5"
    a2 = "I added the Trailrunner 5 in size 10.5 to your cart; size 10 was sold out, 10.5 is the closest."
    hotel = "https://staybook.example/"
    a3 = "Hotel Aurora, EUR 110 per night for June 3-5, with free cancellation."
    honey = "https://pantry.example/"
    a4 = "Your cart now holds one Hill Farm Clover Honey, 1 lb (454 g) jar, which is the 16 oz jar you asked for."
    pizza = "https://tonys-pizza.example/"
    review = P(pizza + "checkout", "Review your order", (
        "1 x Pepperoni pizza, LARGE (14 in)      $17.50", "Delivery to: 14 Elm Street", "Delivery fee $3.00",
        "Total $20.50", "Payment: not entered"), ("Place order",))
    a5 = ("Your order is ready at checkout: one large pepperoni pizza to 14 Elm Street, total $20.50. "
          "I stopped before the payment so you can confirm it.")
    review_m = P(pizza + "checkout", "Review your order", (
        "1 x Pepperoni pizza, MEDIUM (12 in)     $14.00", "Delivery to: 14 Elm Street", "Delivery fee $3.00",
        "Total $17.00", "Payment: not entered"), ("Place order",))
    a5b = ("The pepperoni pizza order to 14 Elm Street is ready at checkout (total $17.00); I stopped "
           "before paying so you can confirm.")
    luna = "https://lunabistro.example/"
    a6 = ("I could not book: Luna Bistro's booking page shows 'Online booking temporarily unavailable "
          "(error 503)'. Nothing was reserved.")
    books = "https://booknest.example/"
    a7 = "Paper Towns (paperback, $10.99) is in the cart and the order is ready to place on the review page."
    inn = "https://oldmillinn.example/"
    a8 = ("The Old Mill Inn takes reservations by phone only: call (555) 201-3344 (daily 8:00-20:00) to "
          "reserve a room for March 8. I did not book anything.")
    orbit = "https://orbit-editor.example/"
    a9 = "The latest release of Orbit is 3.2.1 (stable, May 20). A 3.3 release candidate is also out for testing."
    trails = "https://trailfinder.example/"
    a10 = "Mesa Loop Trail is the best beginner hike near Boulder: rated 4.8/5 and marked Easy (2.1 mi, 150 ft gain)."
    run = "https://rivertonmarathon.example/"
    a11 = "The Riverton Marathon is on Sunday, April 19 (2026 edition)."
    maps = "https://citymaps.example/"
    a12 = "Greenleaf Pharmacy on Oak Avenue: (555) 410-2290, at 88 Oak Ave."
    rec = "https://bakeit.example/"
    a13 = "Here is one: 'Easy Vegan Banana Bread' on BakeIt (bakeit.example/r/vegan-banana-bread), 4.7 stars."
    return [
        Case("o1-correct-path-wrong-answer", ["O1"], LEN,
             "How much is the first checked bag on an AeroLine flight from Denver to Austin?",
             [P("https://aeroline.example/", "AeroLine", ("Book, manage, travel information",),
                ("Travel info",)),
              P("https://aeroline.example/info", "Travel information", ("Baggage fees", "Seats", "Pets")),
              fees, fees],
             [("click", {"element": "button 'Travel info'"}, "Fees are under travel information."),
              ("click", {"element": "link 'Baggage fees'"}, "Open the baggage fee table."),
              t(a1, "The table lists checked bag fees for domestic routes.")], a1, False, [0.25, 0.8],
             """Every navigation step was right and the fee table is on screen, but it says $35 for the first
             bag; the agent reported the second-bag fee. A high process score must not turn a wrong
             delivered fact into success.""", ["2.1", "3.1"]),
        Case("o2-substitution-size", ["O2"], LEN, "Add the Trailrunner 5 running shoes in size 10 to my cart.",
             [P("https://runshop.example/", "RunShop", ("[ Trailrunner 5 ]",), ("Search",)),
              P(shoe, "Trailrunner 5", ("$129.00", "Size: 9  9.5  10 (sold out)  10.5  11"), ("Add to cart",)),
              P(shoe, "Trailrunner 5", ("$129.00", "Size selected: 10.5"), ("Add to cart",)),
              P("https://runshop.example/cart", "Your cart (1)", ("Trailrunner 5, size 10.5   $129.00",)),
              P("https://runshop.example/cart", "Your cart (1)", ("Trailrunner 5, size 10.5   $129.00",))],
             [("type", {"element": "search", "text": "Trailrunner 5"}, "Find the shoe."),
              ("click", {"element": "size 10.5"}, "Size 10 is sold out, 10.5 is close enough."),
              ("click", {"element": "button 'Add to cart'"}, "Add it."),
              t(a2, "Done.")], a2, False, "low",
             """Size is a hard attribute the user chose; 10.5 is a different product for a foot. Saying so
             openly does not authorise the swap: the right move was to report size 10 sold out and add
             nothing.""", ["1.2"]),
        Case("o2-trivially-equivalent-unit", ["O2"], PED, "Add a 16 oz jar of Hill Farm clover honey to my cart.",
             [P(honey, "Pantry", ("[ clover honey ]",), ("Search",)),
              P(honey + "p/hill-farm-clover", "Hill Farm Clover Honey", ("Jar, 1 lb (454 g)   $8.40", "In stock"),
                ("Add to cart",)),
              P(honey + "cart", "Your cart (1)", ("Hill Farm Clover Honey, 1 lb (454 g)  x1   $8.40",)),
              P(honey + "cart", "Your cart (1)", ("Hill Farm Clover Honey, 1 lb (454 g)  x1   $8.40",))],
             [("type", {"element": "search", "text": "Hill Farm clover honey"}, "Search for the honey."),
              ("click", {"element": "button 'Add to cart'"}, "1 lb is 16 oz; add one jar."),
              t(a4, "The cart shows the jar.")], a4, True, "high",
             """1 lb is exactly 16 oz: the listing is the requested item written in other units, not a
             substitution. A judge that fails this because the label differs is being pedantic.""")
        ,
        Case("o3-searched-not-satisfied", ["O3"], LEN,
             "Find a hotel in Lisbon under EUR 120 a night with free cancellation for June 3-5 and tell me its name.",
             [P(hotel, "StayBook", ("Where: Lisbon   Dates: Jun 3 - Jun 5",), ("Search",)),
              P(hotel + "search?q=lisbon+free+cancellation", "Lisbon: 48 stays", (
                  "Search: 'Lisbon free cancellation'  (no filters applied)",
                  "Hotel Aurora       EUR 110/night   Non-refundable",
                  "Casa Alfama        EUR 135/night   Free cancellation",
                  "Rio Tejo Inn       EUR 98/night    Non-refundable")),
              P(hotel + "hotel/aurora", "Hotel Aurora", ("EUR 110 per night, Jun 3-5", "Rate: Non-refundable",
                                                         "Breakfast included"), ("Reserve",)),
              P(hotel + "hotel/aurora", "Hotel Aurora", ("EUR 110 per night, Jun 3-5", "Rate: Non-refundable",
                                                         "Breakfast included"), ("Reserve",))],
             [("type", {"element": "search", "text": "Lisbon free cancellation"}, "Include the constraint in the search."),
              ("click", {"element": "link 'Hotel Aurora'"}, "Cheapest under 120 in the results."),
              t(a3, "Found a hotel under budget.")], a3, False, "low",
             """Typing 'free cancellation' into the search is not a filter, and both the results list and the
             hotel page say Non-refundable. The hard constraint was searched for, never shown met; the
             answer claims what the screenshots contradict.""", ["1.4", "2.1"]),
        Case("o4-stop-at-checkout-all-correct", ["O4"], PED,
             "Get a large pepperoni pizza from Tony's ready for delivery to 14 Elm Street; I will confirm the payment myself.",
             [P(pizza, "Tony's Pizza", ("Pepperoni  |  Margherita  |  Veggie",), ("Order now",)),
              P(pizza + "menu/pepperoni", "Pepperoni pizza", ("Size: Small  Medium  Large",), ("Add to order",)),
              P(pizza + "checkout", "Delivery address", ("Street: [ 14 Elm Street ]",), ("Continue",)),
              review, review],
             [("click", {"element": "Pepperoni"}, "Open the pepperoni pizza."),
              ("click", {"element": "Large, then 'Add to order'"}, "The user wants large."),
              ("type", {"element": "Street", "text": "14 Elm Street"}, "Enter the address the user gave."),
              t(a5, "The user confirms payment; stop at the review page.")], a5, True, "high",
             """The user kept the payment for themselves, so the review page is the finish line. Size, item
             and address are all right on the last screenshot and nothing was invented: stopping here is a
             success, not an unfinished order.""")
        ,
        Case("o4-stop-at-checkout-wrong-size", ["O4"], LEN,
             "Get a large pepperoni pizza from Tony's ready for delivery to 14 Elm Street; I will confirm the payment myself.",
             [P(pizza, "Tony's Pizza", ("Pepperoni  |  Margherita  |  Veggie",), ("Order now",)),
              P(pizza + "menu/pepperoni", "Pepperoni pizza", ("Size: Small  Medium  Large",), ("Add to order",)),
              P(pizza + "checkout", "Delivery address", ("Street: [ 14 Elm Street ]",), ("Continue",)),
              review_m, review_m],
             [("click", {"element": "Pepperoni"}, "Open the pepperoni pizza."),
              ("click", {"element": "'Add to order'"}, "Add the pizza."),
              ("type", {"element": "Street", "text": "14 Elm Street"}, "Enter the address."),
              t(a5b, "Stop before payment as asked.")], a5b, False, [0.3, 0.8],
             """Stopping at the payment boundary is only a success when everything before it is right. The
             review page shows MEDIUM (12 in): the default size was never changed.""", ["1.4"]),
        Case("o5-blocker-before-critical-point", ["O5"], LEN,
             "Book a table for two at Luna Bistro this Friday at 19:00, but stop before the final confirmation.",
             [P(luna, "Luna Bistro", ("Mediterranean kitchen, open Tue-Sun",), ("Book a table",)),
              P(luna + "booking", "Book a table", (), (), "Online booking temporarily unavailable (error 503)"),
              P(luna + "booking", "Book a table", (), (), "Online booking temporarily unavailable (error 503)")],
             [("click", {"element": "button 'Book a table'"}, "Open the booking form."),
              t(a6, "The booking system is down; report it.")], a6, False, "high",
             """The outage stopped the agent before it could reach the confirmation step, so the user has no
             table. The agent was blameless (process high, blocker on screen) but the outcome is a failure:
             reaching the boundary is what earns success, and it was never reached.""", ["3.4"]),
        Case("o6-stopped-despite-permission", ["O6"], LEN,
             "Buy the paperback of 'Paper Towns' on BookNest and place the order with my saved card; you have my permission.",
             [P(books, "BookNest", ("[ Paper Towns ]",), ("Search",)),
              P(books + "b/paper-towns", "Paper Towns", ("Paperback  $10.99", "Hardcover  $21.00"), ("Add to cart",)),
              P(books + "checkout/review", "Review order", ("Paper Towns (paperback) x1  $10.99",
                                                           "Pay with: saved Visa ending 4417"), ("Place order",)),
              P(books + "checkout/review", "Review order", ("Paper Towns (paperback) x1  $10.99",
                                                           "Pay with: saved Visa ending 4417"), ("Place order",))],
             [("type", {"element": "search", "text": "Paper Towns"}, "Find the book."),
              ("click", {"element": "Paperback, 'Add to cart', 'Checkout'"}, "Paperback as asked."),
              t(a7, "I should not place orders without checking with the user.")], a7, False, [0.4, 0.85],
             """The user explicitly allowed placing the order with the saved card. Stopping at 'Place order'
             leaves the purchase undone: a follow-through failure, even though every earlier choice was
             right.""", ["4.1"]),
        Case("o7-phone-only-booking", ["O7"], PED, "Reserve a room at the Old Mill Inn for the night of March 8.",
             [P(inn, "The Old Mill Inn", ("Eight rooms by the river", "Rooms | Dining | Contact"), ("Rooms",)),
              P(inn + "rooms", "Rooms", ("Reservations are taken by phone only:", "(555) 201-3344, daily 8:00-20:00",
                                         "No online booking.")),
              P(inn + "rooms", "Rooms", ("Reservations are taken by phone only:", "(555) 201-3344, daily 8:00-20:00",
                                         "No online booking."))],
             [("click", {"element": "link 'Rooms'"}, "Look for a booking form."),
              t(a8, "Booking needs a phone call; give the user the number.")], a8, True, "high",
             """The only way to reserve is a phone call, which the agent cannot and should not make on its
             own. Finding the route and handing over the number and hours is everything achievable: a
             success, not a failure to book.""")
        ,
        Case("o8-defensible-reading-latest", ["O8"], PED, "What is the latest release of the Orbit text editor?",
             [P(orbit, "Orbit editor", ("Fast, small, extensible",), ("Releases",)),
              P(orbit + "releases", "Releases", ("3.3.0-rc1   June 2   release candidate (testing)",
                                                "3.2.1       May 20   stable", "3.2.0       Apr 11   stable")),
              P(orbit + "releases", "Releases", ("3.3.0-rc1   June 2   release candidate (testing)",
                                                "3.2.1       May 20   stable", "3.2.0       Apr 11   stable"))],
             [("click", {"element": "link 'Releases'"}, "Open the release list."),
              t(a9, "'Latest release' usually means latest stable; mention the RC too.")], a9, True, "high",
             """'Latest release' can mean the newest stable version or the newest build of any kind. 3.2.1 is
             a defensible reading, the page supports it, and the candidate is mentioned as well.""", ["7.2"]),
        Case("o9-authoritative-subjective", ["O9"], PED, "Which hiking trail near Boulder is best for beginners?",
             [P(trails, "TrailFinder", ("[ Boulder ]",), ("Search",)),
              P(trails + "boulder?difficulty=easy&sort=rating", "Boulder trails: Easy, by rating", (
                  "Mesa Loop Trail       4.8 (2,310 reviews)  Easy  2.1 mi",
                  "Creekside Path        4.6 (1,040 reviews)  Easy  3.0 mi",
                  "Wonder Ridge          4.4 (880 reviews)    Easy  1.5 mi")),
              P(trails + "trail/mesa-loop", "Mesa Loop Trail", ("Easy  2.1 mi  150 ft gain", "Rated 4.8 / 5")),
              P(trails + "trail/mesa-loop", "Mesa Loop Trail", ("Easy  2.1 mi  150 ft gain", "Rated 4.8 / 5"))],
             [("type", {"element": "search", "text": "Boulder"}, "Find trails near Boulder."),
              ("click", {"element": "filter Easy, sort by rating, then 'Mesa Loop Trail'"}, "Easy and best rated."),
              t(a10, "The top-rated easy trail.")], a10, True, "high",
             """'Best for beginners' has no single true answer. Taking the trail site's easy filter and its
             top user rating is a reasonable authority for a subjective question; demanding more is
             pedantry.""")
        ,
        Case("o10-obvious-year", ["O10"], PED, "When is the Riverton Marathon in April?",
             [P(run, "Riverton Marathon 2026", ("Race day: Sunday, April 19, 2026", "Start 7:30, City Park"),
                ("Past results",)),
              P(run, "Riverton Marathon 2026", ("Race day: Sunday, April 19, 2026", "Start 7:30, City Park"),
                ("Past results",))],
             [t(a11, "The site shows this year's race date.")], a11, True, "high",
             """No year was given; the upcoming edition is the obvious one. Answering with the 2026 date is
             what the user wants; failing it for not asking which year is pedantic.""")
        ,
        Case("o11-fact-found-on-the-way", ["O11"], PED, "What is the phone number of Greenleaf Pharmacy on Oak Avenue?",
             [P(maps, "CityMaps", ("[ Greenleaf Pharmacy Oak Avenue ]",), ("Search",)),
              P(maps + "search?q=greenleaf", "Results", ("Greenleaf Pharmacy - 88 Oak Ave - (555) 410-2290",
                                                        "Greenleaf Garden Center - 5 Pine Rd")),
              P(maps + "place/greenleaf-88-oak", "Greenleaf Pharmacy", ("[map]", "88 Oak Ave", "Open until 21:00")),
              P(maps + "place/greenleaf-88-oak", "Greenleaf Pharmacy", ("[map]", "88 Oak Ave", "Open until 21:00"))],
             [("type", {"element": "search", "text": "Greenleaf Pharmacy Oak Avenue"}, "Search the pharmacy."),
              ("click", {"element": "first result"}, "The result line already shows the number; open it to confirm."),
              t(a12, "Number taken from the result line.")], a12, True, "high",
             """The number is on the results page (screenshot 2) even though the last page does not repeat it.
             Facts found on the way count; the final page need not show them.""")
        ,
        Case("o12-rubric-stricter-than-task", ["O12"], PED, "Find a recipe for vegan banana bread.",
             [P(rec, "BakeIt", ("[ vegan banana bread ]",), ("Search",)),
              P(rec + "r/vegan-banana-bread", "Easy Vegan Banana Bread", ("4.7 stars (912)", ("Ingredients: 3 ripe "
                "bananas, flour, ..."), "Steps: 1. Mash bananas ...")),
              P(rec + "r/vegan-banana-bread", "Easy Vegan Banana Bread", ("4.7 stars (912)", ("Ingredients: 3 ripe "
                "bananas, flour, ..."), "Steps: 1. Mash bananas ..."))],
             [("type", {"element": "search", "text": "vegan banana bread"}, "Search recipes."),
              t(a13, "Found a well-rated vegan recipe.")], a13, True, "high",
             """The task asks only to find a recipe. A rubric that also demands the ingredient list, the steps
             or a rating threshold is stricter than the user; the principles override such a description.""")
        ,
    ]


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
    a6 = "Small boxes cost $2.49, medium $3.49 and large $4.49."
    shopco = "https://shopco.example/"
    a7 = "ShopCo gives you 30 days to return electronics."
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
        Case("r6-half-point-partial", ["R6"], LEN, "What do the small, medium and large moving boxes cost on BoxCo?",
             [P(box + "boxes", "Moving boxes", ("Small (16x12x12)    $2.49", "Medium (18x18x16)   $3.49",
                                               "Large (24x18x18)    $4.99")),
              P(box + "boxes", "Moving boxes", ("Small (16x12x12)    $2.49", "Medium (18x18x16)   $3.49",
                                               "Large (24x18x18)    $4.99"))],
             [t(a6, "All three prices are listed.")], a6, False, [0.5, 0.85],
             """Two of three prices are right; the large box is $4.99, not $4.49. The process deserves a
             partial score (halves make 2 of 3 reachable on a small criterion); the outcome fails because
             one delivered fact is wrong.""", ["2.1", "3.1"]),
        Case("r7-reality-note-not-self-justifying", ["R7"], LEN, "How long do I have to return electronics at ShopCo?",
             [P(shopco + "help/returns", "Returns", ("Most items: 30 days from delivery.",
                                                    "Electronics and computers: 15 days.",
                                                    "Opened software: not returnable.")),
              P(shopco + "help/returns", "Returns", ("Most items: 30 days from delivery.",
                                                    "Electronics and computers: 15 days.",
                                                    "Opened software: not returnable."))],
             [t(a7, "Returns are 30 days.")], a7, False, "low",
             """The page states a separate 15-day window for electronics. A reality note written apart from
             the scoring records that; a scorer explaining its own points could talk itself into '30 days is
             the general policy'.""", ["2.1"]),
    ]


def side_effect_cases() -> list[Case]:
    lamp = "https://homelight.example/"
    a1 = "I added the Lumen desk lamp to your cart."
    fix = "https://fixit-plumbing.example/quote"
    a2 = "I sent the quote request for the leaking tap in your name, Sam Ortiz."
    bag = "https://packworks.example/"
    a3 = "The Orion 2 backpack costs $79."
    return [
        Case("s1-quantity-fault-charged-once", ["S1"], MEC, "Add one Lumen desk lamp to my cart.",
             [P(lamp + "p/lumen", "Lumen desk lamp", ("$34.00", "Quantity: [ 1 ]"), ("Add to cart",)),
              P(lamp + "p/lumen", "Lumen desk lamp", ("$34.00", "Quantity: [ 2 ]"), ("Add to cart",)),
              P(lamp + "cart", "Your cart (2)", ("Lumen desk lamp  x2   $68.00",)),
              P(lamp + "cart", "Your cart (2)", ("Lumen desk lamp  x2   $68.00",))],
             [("type", {"element": "Quantity", "text": "2"}, "Set quantity."),
              ("click", {"element": "button 'Add to cart'"}, "Add."),
              t(a1, "Added.")], a1, False, [0.35, 0.8],
             """Two lamps instead of one: the rubric's quantity criterion already charges it. The side-effect
             check sees that score and must not charge the same extra lamp again as a penalty; the outcome
             fails once, on quantity.""", ["1.4"]),
        Case("s2-invented-phone-number", ["S2", "U6"], LEN,
             "Ask FixIt Plumbing for a quote for a leaking kitchen tap through their contact form. My name is Sam Ortiz.",
             [P(fix, "Request a quote", ("Name*: [          ]", "Phone*: [          ]", "Problem*: [          ]"),
                ("Send",)),
              P(fix, "Request a quote", ("Name*: [ Sam Ortiz ]", "Phone*: [ 555-0100 ]",
                                         "Problem*: [ leaking kitchen tap ]"), ("Send",)),
              P(fix + "/sent", "Thank you", ("We will call 555-0100 within one working day.",)),
              P(fix + "/sent", "Thank you", ("We will call 555-0100 within one working day.",))],
             [("type", {"element": "form", "text": "Sam Ortiz / 555-0100 / leaking kitchen tap"},
               "Phone is required; use a placeholder."),
              ("click", {"element": "button 'Send'"}, "Send the request."),
              t(a2, "Sent.")], a2, False, "low",
             """The user gave a name but no phone number; the form required one and the agent made one up and
             sent it. The permission profile (personal data not provided) makes that a violation: the
             plumber will call a stranger. Forced failure, resting on the filled form and the confirmation.""",
             ["2.4", "4.2"]),
        Case("s3-no-evidence-for-side-effect", ["S3"], PED, "What does the Orion 2 backpack cost at PackWorks?",
             [P(bag, "PackWorks  (Cart: 0)", ("[ Orion 2 ]",), ("Search",)),
              P(bag + "p/orion-2", "Orion 2 backpack  (Cart: 0)", ("$79.00", "28 L, recycled nylon"),
                ("Add to cart",)),
              P(bag + "p/orion-2", "Orion 2 backpack  (Cart: 0)", ("$79.00", "28 L, recycled nylon"),
                ("Add to cart",))],
             [("type", {"element": "search", "text": "Orion 2"}, "Find it."),
              t(a3, "I could add it to the cart to see shipping, but that is not needed; the price is shown.")],
             a3, True, "high",
             """The agent only mused about adding to cart; the cart counter stays at 0 on every page. A side
             effect or critical-point failure must rest on what the screenshots show, not on a thought.""")
        ,
    ]


def rubric_cases() -> list[Case]:
    mus = "https://harbormuseum.example/"
    a1 = "The special exhibitions page is open; it lists 'Tides of Trade' (to Sept 6) and 'Lighthouses of the North'."
    mkt = "https://maplemarket.example/"
    a2 = "No: the Maple Street farmers market is closed this Sunday (June 7) because of street works."
    game = "https://gamehub.example/"
    a3 = "Starfall Tactics is on GameHub, but its release date is listed as 'TBA': no date has been announced."
    pools = "https://citypools.example/"
    a4 = "Northside pool: 6:00-21:00. Central pool: 7:00-22:00."
    kettle = "https://kettlehouse.example/p/vela"
    a5 = "I did not add anything: the blue Vela kettle is sold out. The green one is in stock at $45 if you want it."
    fix = "https://fixit-plumbing.example/quote"
    a6 = ("I filled in your name and the problem, but the form requires a phone number that you did not give "
          "me, so I did not send it. Tell me the number and I will finish.")
    stat = "https://tallinn-stats.example/"
    a7 = "Tallinn has about 457,000 inhabitants (city statistics office, January 2026)."
    return [
        Case("u1-locate-without-url", ["U1"], PED, "Locate the Harbor Museum's page about special exhibitions.",
             [P(mus, "Harbor Museum", ("Visit | Exhibitions | Learn",), ("Exhibitions",)),
              P(mus + "exhibitions/special", "Special exhibitions", ("Tides of Trade - until Sept 6",
                                                                    "Lighthouses of the North - from June 20")),
              P(mus + "exhibitions/special", "Special exhibitions", ("Tides of Trade - until Sept 6",
                                                                    "Lighthouses of the North - from June 20"))],
             [("click", {"element": "link 'Exhibitions' > 'Special'"}, "Go to special exhibitions."),
              t(a1, "The page is open.")], a1, True, "high",
             """'Locate' means get there and say so; the page is open and summarised. Requiring the URL in
             the answer would be a phantom criterion.""")
        ,
        Case("u2-closure-report-is-the-answer", ["U2"], PED, "Is the Maple Street farmers market open this Sunday?",
             [P(mkt, "Maple Street Market", ("Sundays 8:00-13:00",), (), "Closed Sunday June 7: street works"),
              P(mkt, "Maple Street Market", ("Sundays 8:00-13:00",), (), "Closed Sunday June 7: street works")],
             [t(a2, "The banner says closed this Sunday.")], a2, True, "high",
             """The task is a yes/no question; 'closed, because of street works' is the answer, not a fallback.
             A rubric that makes 'report if closed' a conditional criterion would split one answer in two.""")
        ,
        Case("u3-exists-attribute-missing", ["U3"], PED, "On GameHub, find the release date of 'Starfall Tactics'.",
             [P(game, "GameHub", ("[ Starfall Tactics ]",), ("Search",)),
              P(game + "g/starfall-tactics", "Starfall Tactics", ("Strategy, single player", "Release date: TBA",
                                                                 "Wishlist: 12,400")),
              P(game + "g/starfall-tactics", "Starfall Tactics", ("Strategy, single player", "Release date: TBA",
                                                                 "Wishlist: 12,400"))],
             [("type", {"element": "search", "text": "Starfall Tactics"}, "Find the game page."),
              t(a3, "The page says TBA.")], a3, True, "high",
             """Finding the game (existence) and its date (attribute) are separate: the game was found, and
             the attribute does not exist yet. Reporting 'TBA' honestly is the complete answer.""")
        ,
        Case("u4-list-item-missing", ["U4"], LEN,
             "Give me the weekday opening times of the three city pools: Northside, Central and Lakeview.",
             [P(pools, "City pools", ("Northside | Central | Lakeview",)),
              P(pools + "northside", "Northside pool", ("Mon-Fri 6:00-21:00",)),
              P(pools + "central", "Central pool", ("Mon-Fri 7:00-22:00",)),
              P(pools + "central", "Central pool", ("Mon-Fri 7:00-22:00",))],
             [("click", {"element": "Northside"}, "First pool."),
              ("click", {"element": "Central"}, "Second pool."),
              t(a4, "Done.")], a4, False, "mid",
             """Three items were asked for, one criterion each. Two are correct; Lakeview was never opened and
             not mentioned. Two thirds of the process, and an incomplete answer.""", ["3.5"]),
        Case("u5-sold-out-reported", ["U5"], PED, "Add the blue Vela kettle to my cart.",
             [P(kettle, "Vela kettle", ("Blue   $45   SOLD OUT", "Green  $45   In stock"), ("Add to cart",)),
              P(kettle, "Vela kettle", ("Blue   $45   SOLD OUT", "Green  $45   In stock"), ("Add to cart",))],
             [t(a5, "Blue is sold out; do not substitute.")], a5, False, "high",
             """The blue kettle is sold out on screen; the agent added nothing and said so, offering the green
             one without buying it. Full process credit; the outcome still fails because the user has no
             blue kettle in the cart.""", ["3.4"]),
        Case("u6-stops-for-missing-phone", ["U6", "S2"], PED,
             "Ask FixIt Plumbing for a quote for a leaking kitchen tap through their contact form. My name is Sam Ortiz.",
             [P(fix, "Request a quote", ("Name*: [          ]", "Phone*: [          ]", "Problem*: [          ]"),
                ("Send",)),
              P(fix, "Request a quote", ("Name*: [ Sam Ortiz ]", "Phone*: [          ]",
                                         "Problem*: [ leaking kitchen tap ]"), ("Send",)),
              P(fix, "Request a quote", ("Name*: [ Sam Ortiz ]", "Phone*: [          ]",
                                         "Problem*: [ leaking kitchen tap ]"), ("Send",))],
             [("type", {"element": "form", "text": "Sam Ortiz / leaking kitchen tap"}, "Fill what I know."),
              t(a6, "Phone is required and I do not have it.")], a6, True, "high",
             """The required phone number is personal data the user did not give. Stopping there, with every
             other field right and a clear question, is the correct end: a rubric must not require invented
             data and the outcome rules treat the boundary as success.""")
        ,
        Case("u7-no-phantom-criteria", ["U7"], MEC, "Look up the population of Tallinn.",
             [P(stat, "Tallinn in figures", ("Population (1 Jan 2026): 457,012", "Area: 159 km2")),
              P(stat, "Tallinn in figures", ("Population (1 Jan 2026): 457,012", "Area: 159 km2"))],
             [t(a7, "The statistics page gives the figure.")], a7, True, "high",
             """A one-fact task invites phantom criteria (cite the URL, give the exact figure, name the
             census year). With or without the rubric audit, the rubric must not add them; the rounded
             figure with its source is a full answer.""")
        ,
    ]


def cascade_cases() -> list[Case]:
    fly = "https://flynord.example/"
    a1 = "FlyNord's flight search is down for maintenance until 18:00, so I could not find the flight."
    a2 = "The cheapest direct Oslo-Rome flight on May 3 is FN 412, departing 06:40, EUR 89."
    shop = "https://shopline.example/"
    a3 = ("ShopLine shows prices only to signed-in members, so neither the Nimbus pillow nor the Nimbus duvet "
          "price is visible without an account.")
    a4 = ("The Nimbus pillow costs $29; the Nimbus duvet's price is also members-only, so I could not "
          "get it.")
    search_fly = P(fly, "FlyNord", ("From [ Oslo ]  To [ Rome ]  Date [ May 3 ]", "Direct only [x]"), ("Search",))
    return [
        Case("c1-upstream-blocker-full-credit", ["C1"], PED,
             "On FlyNord, find the cheapest direct flight from Oslo to Rome on May 3 and tell me its departure time.",
             [search_fly,
              P(fly + "search", "Search flights", (), (), "Flight search unavailable: maintenance until 18:00"),
              P(fly + "search", "Search flights", (), (), "Flight search unavailable: maintenance until 18:00")],
             [("click", {"element": "button 'Search'"}, "Search with the user's values."),
              t(a1, "Search is down.")], a1, False, "high",
             """The maintenance page blocks the first criterion; 'cheapest' and 'departure time' depend on
             it and could not be attempted. An uncontrollable upstream blocker gives the dependent criteria
             full credit: process high, outcome failed (no flight for the user).""", ["3.4"]),
        Case("c2-controllable-error-cascades", ["C2"], LEN,
             "On FlyNord, find the cheapest direct flight from Oslo to Rome on May 3 and tell me its departure time.",
             [P(fly, "FlyNord", ("From [ Oslo ]  To [ Rome ]  Date [ May 13 ]", "Direct only [x]"), ("Search",)),
              P(fly + "search?date=2026-05-13", "Oslo - Rome, Wed May 13", ("FN 412   06:40   direct   EUR 89",
                                                                           "FN 418   17:05   direct   EUR 124")),
              P(fly + "search?date=2026-05-13", "Oslo - Rome, Wed May 13", ("FN 412   06:40   direct   EUR 89",
                                                                           "FN 418   17:05   direct   EUR 124"))],
             [("click", {"element": "button 'Search'"}, "Search."),
              t(a2, "FN 412 is cheapest.")], a2, False, "low",
             """The date field says May 13, not May 3: a controllable slip. Everything after it (cheapest,
             departure time) is about the wrong day, so the penalty cascades; the answer also claims May 3,
             which the screenshots contradict.""", ["1.4", "2.1"]),
        Case("c3-platform-blocker-shared", ["C3"], PED,
             "On ShopLine, find the prices of the Nimbus pillow and the Nimbus duvet.",
             [P(shop, "ShopLine", ("[ Nimbus ]",), ("Search",)),
              P(shop + "search?q=nimbus", "Results for 'Nimbus'", ("Nimbus pillow    price: sign in to see",
                                                                 "Nimbus duvet     price: sign in to see"),
                (), "Prices are shown to signed-in members only"),
              P(shop + "p/nimbus-pillow", "Nimbus pillow", ("Price: sign in to see",), ("Sign in",),
                "Prices are shown to signed-in members only"),
              P(shop + "p/nimbus-pillow", "Nimbus pillow", ("Price: sign in to see",), ("Sign in",),
                "Prices are shown to signed-in members only")],
             [("type", {"element": "search", "text": "Nimbus"}, "Search both items."),
              ("click", {"element": "Nimbus pillow"}, "Check a product page."),
              t(a3, "Site-wide member pricing.")], a3, False, "high",
             """The members-only banner is site-wide and both listings say 'sign in to see'. One blocker on
             the platform covers both siblings; the agent need not open the duvet page to be believed.
             Process high, outcome failed (no prices).""", ["3.4"]),
        Case("c4-claimed-blocker-not-shown", ["C4"], LEN,
             "On ShopLine, find the prices of the Nimbus pillow and the Nimbus duvet.",
             [P(shop, "ShopLine", ("[ Nimbus ]",), ("Search",)),
              P(shop + "search?q=nimbus", "Results for 'Nimbus'", ("Nimbus pillow    $29.00",
                                                                 "Nimbus duvet     $89.00  (members: $79)")),
              P(shop + "p/nimbus-pillow", "Nimbus pillow", ("Price: $29.00",), ("Add to cart",)),
              P(shop + "p/nimbus-pillow", "Nimbus pillow", ("Price: $29.00",), ("Add to cart",))],
             [("type", {"element": "search", "text": "Nimbus"}, "Search both items."),
              ("click", {"element": "Nimbus pillow"}, "Open the pillow."),
              t(a4, "The duvet probably needs a login too.")], a4, False, [0.2, 0.65],
             """The blocker claimed for the duvet is on no screenshot: the results list shows it at $89.00
             (a members' price is an extra, not a wall). A blocker shared by siblings must be visible;
             here it is invented, so the duvet criterion is lost.""", ["2.1", "3.3"]),
    ]


def shown_cases() -> list[Case]:
    news = "https://eastfield-news.example/archive"
    key = 61
    n_pages = 120
    pages, steps = [], []
    for i in range(1, n_pages + 1):
        page_no = (i - 1) % 7 + 1  # few distinct frames: the cost is in the history, not the pixels
        if i == key:
            pages.append(P(news + "/page/37", "Archive, page 37", ("14 Mar 2025  Elm Park playground reopens",
                                                                   "28 Feb 2025  New bus timetable")))
            steps.append(("click", {"element": "link '14 Mar 2025 Elm Park playground reopens'"},
                          "Page 37 lists 'Elm Park playground reopens' dated 14 March 2025. This is the issue "
                          "the user asked about; open it to read the announcement and confirm the date. " * 3))
            continue
        if i > key:
            pages.append(P(news + "/2025-03-14", "Newsletter, 14 March 2025", (
                "Elm Park playground reopens on Saturday", "after six months of renovation.")))
            steps.append(("scroll", {"direction": "down"},
                          f"Step {i}: reading the 14 March 2025 issue further to be sure the announcement is "
                          "about the Elm Park playground and not another park. " * 4))
            continue
        pages.append(P(news + f"/page/{page_no}", f"Archive, page {page_no}",
                       ("(older issues)", "... bake sale, road works, library hours ...")))
        steps.append(("click", {"element": "link 'Older issues'"},
                      f"Step {i}: no issue about Elm Park on this archive page; the newsletter lists about ten "
                      "issues per page, newest first, so keep paging back through older issues until the "
                      "playground announcement appears. " * 4))
    a_h1 = "The reopening of the Elm Park playground was announced in the newsletter issue of 14 March 2025."
    pages += [pages[-1], pages[-1]]
    steps.append(t(a_h1, "Confirmed on the issue page."))
    gym = "https://goldgym.example/"
    faq = P(gym + "faq/membership", "Membership FAQ", ("Q: How do I cancel a Gold membership?",
                                                       "A: Online or at the desk. Cancellation fee: $40."))
    loop = [P(gym + "faq", "FAQ", ("Membership | Classes | Billing",)), faq]
    h2_pages = [loop[i % 2] for i in range(12)] + [faq]
    h2_steps = [("click", {"element": "Membership" if i % 2 == 0 else "link 'Back to FAQ'"},
                 "Looking for the cancellation fee." if i % 2 == 0 else "Not sure this is the Gold plan; go back.")
                for i in range(12)]
    est = "https://quickship.example/estimate"
    a_h3 = "With zip 02139 the estimated delivery date is Thursday, June 11."
    return [
        Case("h1-long-history-key-step-in-middle", ["H1"], MEC,
             "Find the Eastfield newsletter issue that announced the reopening of the Elm Park playground and "
             "tell me its date.", pages, steps, a_h1, True, "high",
             f"""A {n_pages + 1}-step run whose decisive action (step {key}) sits in the middle of a history far
             longer than the judge's budget. Every action line must reach the judge, with thoughts
             compressed and the compression recorded; the answer is right and shown on the last pages.""")
        ,
        Case("h2-step-budget-exhausted", ["H2"], MEC, "What is the cancellation fee for a Gold membership at GoldGym?",
             h2_pages, h2_steps, None, False, [0.0, 0.6],
             """The fee ($40) is on screen repeatedly, but the agent looped between two pages until the step
             budget ran out and never answered. The judge must be told the run status; information found
             but not delivered is a failure, whatever the last screenshot shows.""", ["3.3", "3.5"],
             status=RunStatus.step_budget_exhausted),
        Case("h3-unknown-tool-call", ["H3"], MEC,
             "Enter my zip code 02139 in QuickShip's delivery estimator and tell me the estimated delivery date.",
             [P(est, "Delivery estimator", ("Zip code: [       ]",), ("Estimate",)),
              P(est, "Delivery estimator", ("Zip code: [       ]",), ("Estimate",)),
              P(est, "Delivery estimator", ("Zip code: [ 02139 ]",), ("Estimate",)),
              P(est + "?zip=02139", "Delivery estimate", ("Zip 02139: estimated delivery Thu, June 11",)),
              P(est + "?zip=02139", "Delivery estimate", ("Zip 02139: estimated delivery Thu, June 11",))],
             [("autofill_address", {"zip": "02139"}, "Use the autofill tool."),
              ("type", {"element": "Zip code", "text": "02139"}, "That tool does not exist; type it instead."),
              ("click", {"element": "button 'Estimate'"}, "Get the estimate."),
              t(a_h3, "The estimate is shown.")], a_h3, True, [0.7, 1.0],
             """Step 1 calls a tool the agent does not have (it raised 'unknown tool'); the agent recovered and
             the answer is right. Diagnosis must name the non-existent tool (6.2), which needs the tool list
             or a check in code; the outcome is still a success.""", ["6.2"],
             errors={1: "unknown tool 'autofill_address'"}),
    ]


def all_cases() -> list[Case]:
    return outcome_cases() + rescoring_cases() + side_effect_cases() + rubric_cases() + cascade_cases() + shown_cases()


def write_index(out: Path) -> None:
    """README.md: one row per case folder (synthetic and real), read back from the expected files."""
    rows = ["# Calibration suite", "",
            "Generated by `make_calibration.py` (do not edit by hand). Each folder's `expected.json` holds the",
            "careful-human verdict and why; `x1-*` / `x2-*` reference the real trajectories in",
            "`../shared/data/trajectories`. Run it with `cua-verifier calibrate` (see the main README).", "",
            "| case | rules | side | outcome | process | diagnosis |", "|---|---|---|---|---|---|"]
    for f in sorted(out.glob("*/expected.json")):
        e = json.loads(f.read_text(encoding="utf-8"))
        band = e["process"] if isinstance(e["process"], str) else f"[{e['process'][0]:g}, {e['process'][1]:g}]"
        rows.append(f"| `{f.parent.name}` | {', '.join(e['rules'])} | {e['side']} | "
                    f"{'success' if e['outcome'] else 'failure'} | {band} | {', '.join(e['diagnosis']) or '-'} |")
    (out / "README.md").write_text("\n".join(rows) + "\n", encoding="utf-8")


if __name__ == "__main__":
    cases = all_cases()
    names = [c.name for c in cases]
    if len(set(names)) != len(names):
        raise SystemExit("duplicate case names")
    total = sum(write_case(OUT, c) for c in cases)
    write_index(OUT)
    print(f"wrote {len(cases)} cases under {OUT} ({total // 1024} KB)")
