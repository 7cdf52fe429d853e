"""Judgement cases a pedantic judge gets wrong: nitpicks alone (O16), an inference from absence
(R10) and stale third-party data (C6). Each is a success a careful reader passes; a judge that
fails them is strict in the wrong place, and a code veto that fails them would add a false
negative (the adversarial run checks that none does)."""
from __future__ import annotations

from .draw import PED, Case, P, t


def judgement_cases() -> list[Case]:
    fly = "https://skyfare.example/"
    results = P(fly + "search?from=BOS&to=DEN&date=2026-07-09", "Boston to Denver, Thu 9 Jul 2026",
                ("UA 1141   BOS 06:05 -> DEN 09:02   nonstop   $219",
                 "WN 2210   BOS 07:40 -> DEN 12:55   1 stop    $184",
                 "DL 0488   BOS 11:15 -> DEN 16:20   1 stop    $241"), ("Select",))
    a16 = "There is one direct flight: United, leaving around 6 in the morning, for about $220."
    lib = "https://maplestreetlibrary.example/"
    equipment = P(lib + "equipment", "Equipment you can use", ("Public computers (12)", "Scanner and photocopier",
                                                              "Microfilm reader", "Laptop loans (2 weeks)"))
    booking = P(lib + "book", "Book a room or device", ("Study room A / B", "Meeting room (up to 20)",
                                                        "Microfilm reader (1 h slots)"), ("Book",))
    a10 = ("No. The branch's equipment and booking pages list public computers, a scanner, a microfilm reader, "
           "laptop loans and meeting rooms, but no 3D printer.")
    eats = "https://cityeats.example/"
    listing = P(eats + "rosas-taqueria-elm-st", "Rosa's Taqueria, 14 Elm St", ("4.5 stars (311 reviews)",
                "Hours: Mon-Sat 11:00-21:00, Sun closed", "Hours last updated by the owner: March 2023"),
                ("Menu", "Directions"), banner="These hours may have changed")
    a6 = ("CityEats lists Rosa's Taqueria (14 Elm St) as open 11:00-21:00 on Saturdays. The listing's hours "
          "were last updated in March 2023 and the site warns they may have changed.")
    return [
        Case("o16-nitpicks-only", ["O16"], PED,
             "Is there a direct flight from Boston to Denver on July 9? Tell me the airline, time and price.",
             [P(fly, "SkyFare", ("From [ BOS ]  To [ DEN ]  Date [ 2026-07-09 ]",), ("Search",)), results, results],
             [("click", {"element": "Search"}, "Search Boston to Denver on July 9."),
              t(a16, "UA 1141 is the only nonstop on the results page.")], a16, True, "high",
             """The answer names the only nonstop flight the results page shows (United, 06:05, $219). It
             rounds the time and the price and gives no flight number or link: nitpicks a user shrugs at.
             A judge that fails it for imprecision is pedantic; nitpicks alone never fail a task.""")
        ,
        Case("r10-inference-from-absence", ["R10"], PED,
             "Does the Maple Street Library have a 3D printer that members can book?",
             [P(lib, "Maple Street Library", ("Opening hours | Events | Equipment | Book",), ("Equipment",)),
              equipment, booking, booking],
             [("click", {"element": "Equipment"}, "See what equipment the branch has."),
              ("click", {"element": "link 'Book a room or device'"}, "Check what can be booked."),
              t(a10, "Neither the equipment list nor the booking page has a 3D printer.")], a10, True, "high",
             """The agent opened the two pages where a bookable 3D printer would be listed, and both list
             every bookable device without one. 'No' is a supported inference from absence, not a claim
             with no basis. A judge that wants a page saying 'we have no 3D printer' is pedantic.""")
        ,
        Case("c6-stale-third-party-data", ["C6"], PED,
             "What time does Rosa's Taqueria on Elm Street open on Saturdays? Check CityEats.",
             [P(eats, "CityEats", ("[ Rosa's Taqueria Elm Street ]",), ("Search",)), listing, listing],
             [("click", {"element": "result 'Rosa's Taqueria, 14 Elm St'"}, "Open the listing."),
              t(a6, "The hours are on the listing, with a warning that they may be outdated.")], a6, True, "high",
             """The user named CityEats, and the agent reported what its listing shows, with the listing's
             age and the site's own warning. That the hours may be out of date is the third party's fault,
             which the agent cannot fix: full credit and a success. Penalising the agent for the site's
             stale data confuses an uncontrollable limitation with an agent error.""")
        ,
    ]
