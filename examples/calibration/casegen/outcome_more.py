"""Outcome cases O10-O15: the run date, facts found on the way, rubrics stricter than the task
(generated or provided), the last step as the deliverable, and delivery when items are unavailable."""
from __future__ import annotations

from typing import Any

from .draw import LEN, PED, Case, P, t

RUN_DATE_LATE = 1792915200.0  # 2026-10-25T08:00:00Z: one week after the race of the run-date case


def rubric(subgoals: list[str], criteria: list[tuple[str, str, float]], audit: str) -> dict[str, Any]:
    """A provided rubric in the verifier's `Rubric` JSON (no critical point: these are look-ups)."""
    return {"criteria": [{"id": f"c{i}", "name": n, "description": d, "max_points": m}
                         for i, (n, d, m) in enumerate(criteria, start=1)],
            "stated_subgoals": subgoals, "critical_points": [],
            "permission": {"permission": "no_critical_point", "permission_quote": "", "missing_personal_data": [],
                           "underspecified": []},
            "self_audit": audit}


def more_outcome_cases() -> list[Case]:
    run = "https://rivertonmarathon.example/"
    race = P(run, "Riverton Marathon", ("2026 race: Sunday, October 18, 2026", "Start 7:30, City Park",
                                        "2025 race (October 19, 2025): results and photos"), ("Register",))
    a10 = "The Riverton Marathon is on Sunday, October 18, 2026, starting at 7:30 in City Park."
    race_only = P(run, "Riverton Marathon", ("2026 race: Sunday, October 18, 2026", "Start 7:30, City Park"),
                  ("Photos",))
    maps = "https://citymaps.example/"
    a11 = "Greenleaf Pharmacy on Oak Avenue: (555) 410-2290, at 88 Oak Ave."
    rec = "https://bakeit.example/"
    recipe = P(rec + "r/vegan-banana-bread", "Easy Vegan Banana Bread", ("4.7 stars (912)",
               "Ingredients: 3 ripe bananas, flour, oat milk, ...", "Steps: 1. Mash the bananas ..."))
    a12 = "'Easy Vegan Banana Bread' on BakeIt."
    mus = "https://harbormuseum.example/visit"
    a13 = "The Harbor Museum is open on Sundays from 10:00 to 17:00."
    band = "https://lanterns-music.example/"
    a14 = "I found several songs by The Lanterns that are under 3 minutes on their album page."
    grocer = "https://freshcart.example/"
    a15 = ("Eggs (12, free range) and semi-skimmed milk (2 L) are in your cart. The brown rice (1 kg) is "
           "out of stock, so I did not add it or anything in its place.")
    return [
        Case("o10-obvious-year", ["O10"], PED, "When is the Riverton Marathon?",
             [race, race], [t(a10, "The page lists this year's race and last year's results.")], a10, True, "high",
             """No year was given and the run took place on June 1, 2026 (the run date shown with the
             trajectory). The page also shows the 2025 race prominently, with results; the next race is
             the 2026 one, and the agent named it. Failing it for not asking which year, or for ignoring
             the 2025 date, is pedantic.""")
        ,
        Case("o10-run-date-race-already-run", ["O10"], LEN, "When is the Riverton Marathon?",
             [race_only, race_only], [t(a10, "The site shows the race date.")], a10, False, "low",
             """The run took place on October 25, 2026 (its timestamps; the run date is shown to the judge).
             The only date on the page, October 18, 2026, is a week in the past, and the answer presents it
             as the coming race. The right answer says the 2026 race is over and the next date is not on the
             site. A judge without the run date, or one that ignores it, cannot tell, and passes a past
             event as upcoming.""", ["2.1"], t0=RUN_DATE_LATE),
        Case("o11-fact-found-on-the-way", ["O11"], PED, "What is the phone number of Greenleaf Pharmacy on Oak Avenue?",
             [P(maps, "CityMaps", ("[ Greenleaf Pharmacy Oak Avenue ]",), ("Search",)),
              P(maps + "search?q=greenleaf", "Results", ("Greenleaf Pharmacy - 88 Oak Ave - (555) 410-2290",
                                                        "Greenleaf Garden Center - 5 Pine Rd")),
              P(maps + "place/greenleaf-88-oak", "Greenleaf Pharmacy", ("[map]", "88 Oak Ave", "Open until 21:00")),
              P(maps + "place/greenleaf-88-oak", "Greenleaf Pharmacy", ("[map]", "88 Oak Ave", "Open until 21:00"))],
             [("type", {"element": "search", "text": "Greenleaf Pharmacy Oak Avenue"}, "Search the pharmacy."),
              ("click", {"element": "first result"}, "The result line already shows the number; open it to confirm."),
              t(a11, "Number taken from the result line.")], a11, True, "high",
             """The number is on the results page (screenshot 2) even though the last page does not repeat it.
             Facts found on the way count; the final page need not show them.""")
        ,
        Case("o12-rubric-stricter-than-task", ["O12"], PED, "Find a recipe for vegan banana bread on BakeIt.",
             [P(rec, "BakeIt", ("[ vegan banana bread ]",), ("Search",)), recipe, recipe],
             [("type", {"element": "search", "text": "vegan banana bread"}, "Search recipes."),
              t(a12, "Found a vegan recipe.")], a12, True, "high",
             """The task asks only to find a recipe, and the answer names one that the final page shows. The
             provided rubric's description demands more than the task (the recipe's URL, its rating and
             its ingredient list in the answer). The principles win over a description stricter than the
             task: full credit, success. A judge that docks the missing URL is applying the rubric's words,
             not the user's.""",
             rubric=rubric(["Find a vegan banana bread recipe on BakeIt"], [
                 ("Vegan banana bread recipe found", ("Full credit: the answer names a vegan banana bread recipe "
                  "on BakeIt AND gives its URL, its star rating and its full ingredient list. Partial: a recipe "
                  "is named but the URL, rating or ingredients are missing. Zero: no recipe, or not vegan."), 5)],
                 "Provided with the task (calibration case o12); not audited.")),
        Case("o13-provided-rubric-stricter-than-task", ["O13"], PED,
             "What are the Harbor Museum's opening hours on Sundays?",
             [P(mus, "Plan your visit", ("Mon: closed", "Tue-Sat: 9:00-18:00", "Sun: 10:00-17:00",
                                         "Holiday hours may differ, see the calendar")),
              P(mus, "Plan your visit", ("Mon: closed", "Tue-Sat: 9:00-18:00", "Sun: 10:00-17:00",
                                         "Holiday hours may differ, see the calendar"))],
             [t(a13, "The visit page lists the Sunday hours.")], a13, True, "high",
             """A benchmark's provided rubric adds two criteria the task never asked for: cite the page's
             URL, and report the holiday hours. The task text is the contract: a criterion demanding what
             the user did not ask for earns full credit when the task itself was done, and the outcome is
             judged on the task. The Sunday hours are right and on screen: success, process high.""",
             rubric=rubric(["Report the museum's Sunday opening hours"], [
                 ("Sunday opening hours", ("Full credit: the Sunday opening hours as the museum's site shows them. "
                  "Zero: missing or wrong hours."), 4),
                 ("Source URL cited", ("Full credit: the answer gives the URL of the page the hours come from. "
                  "Zero: no URL."), 3),
                 ("Holiday hours reported", ("Full credit: the answer also reports the holiday opening hours. "
                  "Zero: holiday hours not mentioned."), 3)],
                 "Provided by a benchmark (calibration case o13); not audited.")),
        Case("o14-found-but-not-named", ["O14"], LEN,
             "Find a song by The Lanterns that is shorter than 3 minutes and tell me its title.",
             [P(band, "The Lanterns", ("Albums | Tour | Shop",), ("Albums",)),
              P(band + "albums/harbor-lights", "Harbor Lights (2024)", ("1. Low Tide        3:42",
                                                                      "2. Paper Boats     2:48",
                                                                      "3. North Window    4:05",
                                                                      "4. Salt            2:31")),
              P(band + "albums/harbor-lights", "Harbor Lights (2024)", ("1. Low Tide        3:42",
                                                                      "2. Paper Boats     2:48",
                                                                      "3. North Window    4:05",
                                                                      "4. Salt            2:31"))],
             [("click", {"element": "Albums > Harbor Lights"}, "The track list has durations."),
              t(a14, "Two tracks are under three minutes.")], a14, False, [0.3, 0.8],
             """Every step was right and the track list on screen has two qualifying songs (Paper Boats 2:48,
             Salt 2:31), but the answer names neither. In a multi-step task the last step is the deliverable:
             the user asked for a title and received none. A lenient judge sees the right page and the
             claim 'found several' and passes it.""", ["3.3"]),
        Case("o15-list-item-unavailable-reported", ["O15"], PED,
             "Add a dozen free-range eggs, 2 L of semi-skimmed milk and a 1 kg bag of brown rice to my FreshCart cart.",
             [P(grocer, "FreshCart", ("[ eggs ]",), ("Search",)),
              P(grocer + "p/eggs-12", "Free-range eggs, 12", ("$4.20", "In stock"), ("Add to cart",)),
              P(grocer + "p/milk-2l", "Semi-skimmed milk, 2 L", ("$2.35", "In stock"), ("Add to cart",)),
              P(grocer + "p/brown-rice-1kg", "Brown rice, 1 kg", ("$3.10", "OUT OF STOCK"), ("Notify me",)),
              P(grocer + "cart", "Your cart (2)", ("Free-range eggs, 12   x1   $4.20",
                                                  "Semi-skimmed milk, 2 L   x1   $2.35")),
              P(grocer + "cart", "Your cart (2)", ("Free-range eggs, 12   x1   $4.20",
                                                  "Semi-skimmed milk, 2 L   x1   $2.35"))],
             [("click", {"element": "Free-range eggs, 12"}, "Eggs first."),
              ("click", {"element": "button 'Add to cart'"}, "Added the eggs; now the milk."),
              ("click", {"element": "button 'Add to cart'"}, "Added the milk; now the rice."),
              ("click", {"element": "link 'Cart'"}, "The rice is out of stock; do not substitute."),
              t(a15, "Report the missing rice.")], a15, True, "high",
             """Three items were asked for; two are in the cart and the third is shown out of stock and
             reported, with nothing put in its place. The user has everything the shop could supply and knows
             what is missing: by the availability rule that is a delivered task, not a blocked one (nothing
             of a single-item task would have been delivered). Failing it because the cart lacks rice
             reads the availability rule backwards.""")
        ,
    ]

